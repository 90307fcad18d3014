package trainlog

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// readCase reads the log of a case of testdata/field/train.
func readCase(t testing.TB, name string) Log {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fieldDir, name, "*.*"))
	assert.NilError(t, err)
	for _, p := range paths {
		if filepath.Base(p) == "case.yaml" {
			continue
		}
		f, err := os.Open(p)
		assert.NilError(t, err)
		defer f.Close()
		l, err := Read(f)
		assert.NilError(t, err, p)
		return l
	}
	t.Fatalf("no log in %s", name)
	return Log{}
}

// gate returns the check of the named gate.
func gate(t testing.TB, cs []result.Check, name string) result.Check {
	t.Helper()
	for _, c := range cs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %q check in %+v", name, cs)
	return result.Check{}
}

// TestGatesWarmup holds warm-up to the steps it names: the first warmup
// steps by iteration and those the writer marked, never judged, and no
// judged step at all is a warn, never a silent pass.
func TestGatesWarmup(t *testing.T) {
	debug := readCase(t, "torchtitan-checkpoint-debug") // steps 14-21, a spike at 18
	marked := readCase(t, "torchtitan-checkpoint-debug")
	for i := range marked.Steps[:4] {
		marked.Steps[i].Warmup = true
	}
	reversed := readCase(t, "torchtitan-checkpoint-debug")
	for i, j := 0, len(reversed.Steps)-1; i < j; i, j = i+1, j-1 {
		reversed.Steps[i], reversed.Steps[j] = reversed.Steps[j], reversed.Steps[i]
	}
	cases := []struct {
		name    string
		l       Log
		warmup  int
		finite  string // outcome of "loss finite"
		falls   string
		message string // substring of "loss falls"
	}{
		{"none", debug, 0, "pass", "pass", "iterations 14-15"},
		{"negative counts as none", debug, -3, "pass", "pass", "iterations 14-15"},
		{"four by count", debug, 4, "pass", "pass", "iterations 18-18"},
		{"four marked by the writer", marked, 0, "pass", "pass", "iterations 18-18"},
		{"by iteration, not log order", reversed, 4, "pass", "pass", "iterations 18-18"},
		{"five leave three: too few", debug, 5, "pass", "warn", "too few steps to tell: 3"},
		{"all", debug, 8, "warn", "warn", "too few steps to tell: 0"},
		{"more than all", marked, 9, "warn", "warn", "too few steps to tell: 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := Gates(c.l, c.warmup)
			assert.Equal(t, outcome(gate(t, cs, GateLossFinite)), c.finite)
			falls := gate(t, cs, GateLossFalls)
			assert.Equal(t, outcome(falls), c.falls, falls.Message)
			assert.Assert(t, strings.Contains(falls.Message, c.message), falls.Message)
		})
	}
}

// TestGatesWarmupHidesNaN: a NaN inside warm-up is not judged, a NaN line
// of the writer always is.
func TestGatesWarmupHidesNaN(t *testing.T) {
	nan := readCase(t, "megatron-deepspeed-grad-norm-nan") // grad norm nan on 3 lines
	c := gate(t, Gates(nan, 2), GateLossFinite)
	assert.Equal(t, outcome(c), "fail")
	assert.Assert(t, strings.Contains(c.Message, "iteration 5428") && !strings.Contains(c.Message, "iteration 5426"), c.Message)
	assert.Equal(t, outcome(gate(t, Gates(nan, 3), GateLossFinite)), "warn")
	line := readCase(t, "megatron-bf16-nan-loss-dropped") // a dropped loss, then a NaN warning line
	c = gate(t, Gates(line, 1), GateLossFinite)
	assert.Equal(t, outcome(c), "fail")
	assert.Assert(t, strings.Contains(c.Message, "Bad grad_norm") && !strings.Contains(c.Message, "iteration 3633"), c.Message)
}

// TestReadRejects: what is not a training log of a known writer is an
// error naming what was expected, and Sniff leaves it to its own reader.
// The other tools' real outputs of testdata/field serve as the inputs.
func TestReadRejects(t *testing.T) {
	_, err := Read(strings.NewReader(""))
	assert.ErrorContains(t, err, "empty training log: expected a training log of Megatron-LM")
	n := 0
	err = filepath.WalkDir("../../../testdata/field", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && d.Name() == "train" {
			if err == nil {
				err = filepath.SkipDir
			}
			return err
		}
		// case.yaml, the SKU files and the READMEs are about outputs,
		// not outputs.
		if d.IsDir() || strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".md") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		assert.Assert(t, !Sniff(data[:min(len(data), 64<<10)]), "Sniff takes %s", p)
		_, rerr := Read(bytes.NewReader(data))
		assert.ErrorContains(t, rerr, "expected a training log", p)
		return nil
	})
	assert.NilError(t, err)
	assert.Assert(t, n > 50, "only %d other outputs", n)
}

// FuzzRead: no input makes Read, Sniff or Gates panic, and what Read
// accepts is a log of a known writer holding a step or a failure.
func FuzzRead(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join(fieldDir, "*", "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		if filepath.Base(p) == "case.yaml" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 8<<10 {
			data = data[len(data)-8<<10:]
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = Sniff(data)
		l, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		switch l.Writer {
		case WriterMegatron, WriterPrimus, WriterTorchtitan, WriterNeMo:
		default:
			t.Fatalf("writer %q", l.Writer)
		}
		if len(l.Steps)+len(l.Failures) == 0 {
			t.Fatal("accepted a log with no step and no failure")
		}
		for _, fl := range l.Failures {
			if len(fl.Text) > 200 || fl.Line < 1 {
				t.Fatalf("failure %+v", fl)
			}
		}
		for _, w := range []int{-1, 0, 1, len(l.Steps)} {
			for _, c := range Gates(l, w) {
				if c.Name == "" || c.Message == "" {
					t.Fatalf("check %+v", c)
				}
			}
		}
	})
}
