package trainlog

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// fieldDir holds the real training logs (testdata/field/README.md).
const fieldDir = "../../../testdata/field/train"

// trainCase is a case.yaml of testdata/field/train: the fields every
// field case has (source, verdict, and expect for gpuaccept check), and
// trainlog, what Read and Gates must make of the log.
type trainCase struct {
	Source      string   `yaml:"source"`
	Tool        string   `yaml:"tool"`
	Hardware    string   `yaml:"hardware"`
	Test        string   `yaml:"test"`
	SKU         string   `yaml:"sku"`
	Nodes       int      `yaml:"nodes"`
	GPUsPerNode int      `yaml:"gpus_per_node"`
	Files       []string `yaml:"files"`
	Verdict     string   `yaml:"verdict"`
	Expect      struct {
		Status     string   `yaml:"status"`
		Message    []string `yaml:"message"`
		NotMessage []string `yaml:"not_message"`
	} `yaml:"expect"`
	TrainLog struct {
		// Warmup is Gates' warmup argument.
		Warmup int `yaml:"warmup"`
		// Error is a substring Read's error must hold; empty: Read must
		// succeed.
		Error    string         `yaml:"error"`
		Writer   string         `yaml:"writer"`
		Steps    int            `yaml:"steps"`
		Failures map[string]int `yaml:"failures"`
		// First is the first step kept, as Read must give it.
		First *struct {
			Iter     int      `yaml:"iter"`
			Of       int      `yaml:"of"`
			Line     int      `yaml:"line"`
			Loss     *float64 `yaml:"loss"`
			GradNorm *float64 `yaml:"grad_norm"`
			Millis   float64  `yaml:"millis"`
			TFLOPS   float64  `yaml:"tflops"`
			Tokens   float64  `yaml:"tokens"`
			MemGiB   float64  `yaml:"mem_gib"`
			Skipped  int      `yaml:"skipped"`
			Dropped  bool     `yaml:"loss_dropped"`
		} `yaml:"first"`
		Info map[string]string `yaml:"info"`
		// Gates maps each gate to pass, warn, fail, error or absent.
		Gates map[string]string `yaml:"gates"`
		// Messages holds substrings of the named gate's message.
		Messages map[string][]string `yaml:"messages"`
	} `yaml:"trainlog"`
}

// outcome names what a check says, as case.yaml writes it.
func outcome(c result.Check) string {
	switch {
	case c.OK:
		return "pass"
	case c.Error:
		return "error"
	case c.Warn:
		return "warn"
	}
	return "fail"
}

// near reports whether got is the number case.yaml writes, up to float
// rounding.
func near(got, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

// TestFieldTrain reads every real log of testdata/field/train and holds
// Read and Gates to what case.yaml says a careful engineer reads from it.
func TestFieldTrain(t *testing.T) {
	cfs, err := filepath.Glob(filepath.Join(fieldDir, "*", "case.yaml"))
	assert.NilError(t, err)
	sort.Strings(cfs)
	assert.Assert(t, len(cfs) >= 10, "only %d cases under %s", len(cfs), fieldDir)
	for _, cf := range cfs {
		dir := filepath.Dir(cf)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			data, err := os.ReadFile(cf)
			assert.NilError(t, err)
			var c trainCase
			dec := yaml.NewDecoder(bytes.NewReader(data))
			dec.KnownFields(true)
			assert.NilError(t, dec.Decode(&c), cf)
			for what, v := range map[string]string{"source": c.Source, "tool": c.Tool, "hardware": c.Hardware, "verdict": c.Verdict, "expect.status": c.Expect.Status} {
				assert.Assert(t, v != "", "%s: %s is empty", cf, what)
			}
			files := c.Files
			if len(files) == 0 {
				ents, err := os.ReadDir(dir)
				assert.NilError(t, err)
				for _, e := range ents {
					if e.Name() != "case.yaml" {
						files = append(files, e.Name())
					}
				}
			}
			assert.Equal(t, len(files), 1, "%s: one log per case", dir)
			f, err := os.Open(filepath.Join(dir, files[0]))
			assert.NilError(t, err)
			defer f.Close()
			head, err := os.ReadFile(filepath.Join(dir, files[0]))
			assert.NilError(t, err)
			want := c.TrainLog
			l, err := Read(f)
			if want.Error != "" {
				assert.ErrorContains(t, err, want.Error)
				return
			}
			assert.NilError(t, err)
			assert.Assert(t, Sniff(head[:min(len(head), 64<<10)]), "Sniff does not route %s to Read", files[0])
			assert.Equal(t, l.Writer, want.Writer)
			assert.Equal(t, len(l.Steps), want.Steps)
			kinds := map[string]int{}
			for _, fl := range l.Failures {
				kinds[fl.Kind]++
			}
			if len(want.Failures) == 0 {
				assert.Equal(t, len(kinds), 0, "failures %+v", l.Failures)
			} else {
				assert.DeepEqual(t, kinds, want.Failures)
			}
			for k, v := range want.Info {
				assert.Equal(t, l.Info[k], v, "info %s", k)
			}
			if w := want.First; w != nil {
				assert.Assert(t, len(l.Steps) > 0)
				s := l.Steps[0]
				assert.Equal(t, s.Iter, w.Iter)
				assert.Equal(t, s.Of, w.Of)
				assert.Equal(t, s.Line, w.Line)
				assert.Equal(t, s.HasLoss, w.Loss != nil, "loss %v", s.Loss)
				if w.Loss != nil {
					assert.Assert(t, near(s.Loss, *w.Loss), "loss %v, want %v", s.Loss, *w.Loss)
				}
				assert.Equal(t, s.HasGradNorm, w.GradNorm != nil, "grad norm %v", s.GradNorm)
				if w.GradNorm != nil {
					assert.Assert(t, near(s.GradNorm, *w.GradNorm), "grad norm %v, want %v", s.GradNorm, *w.GradNorm)
				}
				for _, p := range []struct {
					what      string
					got, want float64
				}{{"millis", s.Millis, w.Millis}, {"tflops", s.TFLOPSPerGPU, w.TFLOPS}, {"tokens", s.TokensPerSecPerGPU, w.Tokens}, {"mem_gib", s.PeakMemGiB, w.MemGiB}} {
					assert.Assert(t, near(p.got, p.want), "%s %v, want %v", p.what, p.got, p.want)
				}
				assert.Equal(t, s.Skipped, w.Skipped)
				assert.Equal(t, s.LossDropped, w.Dropped)
			}
			got := map[string]result.Check{}
			for _, ch := range Gates(l, want.Warmup) {
				got[ch.Name] = ch
			}
			assert.Assert(t, len(want.Gates) == 5, "%s: name all five gates", cf)
			for gate, o := range want.Gates {
				ch, ok := got[gate]
				if o == "absent" {
					assert.Assert(t, !ok, "%s: %+v", gate, ch)
					continue
				}
				assert.Assert(t, ok, "no %q check", gate)
				assert.Equal(t, outcome(ch), o, "%s: %s", gate, ch.Message)
				assert.Assert(t, ch.Message != "", gate)
			}
			for gate, subs := range want.Messages {
				for _, sub := range subs {
					assert.Assert(t, strings.Contains(got[gate].Message, sub), "%s: %q lacks %q", gate, got[gate].Message, sub)
				}
			}
		})
	}
}
