package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// rec holds the outputs of trainbench.py recorded on this project's
// 1-GPU H100 (testdata/recordings/h100x1-2026-12-07/README.md, issue 32).
const rec = "../../testdata/recordings/h100x1-2026-12-07/issue32/"

func parse(t *testing.T, test string, params map[string]string, logs ...string) result.Parsed {
	t.Helper()
	var outs []plan.Output
	for _, l := range logs {
		outs = append(outs, plan.Output{Step: "single", Log: l})
	}
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Params: params,
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}, Outputs: outs})
	assert.NilError(t, err)
	return p
}

// failed names the checks that failed or errored (not those that warn).
func failed(p result.Parsed) []string {
	var out []string
	for _, c := range p.Checks {
		if !c.OK && !c.Warn {
			out = append(out, c.Name)
		}
	}
	return out
}

// The recorded runs read as a careful engineer reads them: idle runs
// measure 3 layers of the 32B shape at about 28,000 tokens/s and pass
// every gate; the busy run measures less and passes every gate (its
// verdict is the baseline's); the lr 1e6 run fails "loss finite" while
// its throughput is normal; the DDP run of one rank reads like the rest.
func TestParseRecorded(t *testing.T) {
	cases := []struct {
		name, test, log string
		failed          []string
		tokensMin       float64
		tokensMax       float64
	}{
		{"idle 1", "gpu", rec + "train-1/raw/train.gpu/single.log", nil, 27000, 29000},
		{"idle 3", "gpu", rec + "train-3/raw/train.gpu/single.log", nil, 27000, 29000},
		{"against the recording", "gpu", rec + "train-4/raw/train.gpu/single.log", nil, 27000, 29000},
		{"busy GPU", "gpu", rec + "busy/raw/train.gpu/single.log", nil, 10000, 15000},
		{"lr 1e6", "gpu", rec + "nan/raw/train.gpu/single.log", []string{"loss finite vm GPU 0"}, 27000, 31000},
		{"ddp, one rank", "node", rec + "ddp.log", nil, 30000, 33000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := parse(t, c.test, nil, c.log)
			assert.Equal(t, p.Error, "")
			assert.DeepEqual(t, failed(p), c.failed)
			var tokens float64
			for _, m := range p.Metrics {
				if m.Name == "tokens_per_s" {
					tokens = m.Value
					assert.Equal(t, m.Labels["model"], "qwen2.5-32b")
					assert.Assert(t, m.Labels["layers"] == "3" || m.Labels["layers"] == "2", m.Labels)
				}
			}
			assert.Assert(t, tokens >= c.tokensMin && tokens <= c.tokensMax, "tokens/s %v not in [%v, %v]", tokens, c.tokensMin, c.tokensMax)
			assert.Equal(t, p.Info["gpu"], "NVIDIA H100 80GB HBM3")
		})
	}
}

// An output cut short, or of another tool, is never a pass: a cut run
// errors "ran to the end" (fewer steps than its config announced), and
// an output with no line of the script is an error of the parse.
func TestParseBroken(t *testing.T) {
	whole, err := os.ReadFile(rec + "train-1/raw/train.gpu/single.log")
	assert.NilError(t, err)
	lines := bytes.SplitAfter(whole, []byte("\n"))
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.log")
	assert.NilError(t, os.WriteFile(cut, bytes.Join(lines[:12], nil), 0o644))
	other := filepath.Join(dir, "other.log")
	assert.NilError(t, os.WriteFile(other, []byte("# nThread 1 nGpus 1 minBytes 8\n"), 0o644))
	noConfig := filepath.Join(dir, "noconfig.log")
	assert.NilError(t, os.WriteFile(noConfig, bytes.Join(lines[1:], nil), 0o644))

	p := parse(t, "gpu", nil, cut)
	assert.Assert(t, strings.Contains(strings.Join(failed(p), ","), "ran to the end vm GPU 0"), failed(p))
	p = parse(t, "gpu", nil, other)
	assert.ErrorContains(t, errOf(p), "no trainbench.py line")
	p = parse(t, "gpu", nil, noConfig)
	assert.Assert(t, strings.Contains(strings.Join(failed(p), ","), "train config vm GPU 0"), failed(p))

	// A whole, good log from a step that then exited non-zero (killed
	// without a word after its last step) is no sign-off: an error.
	for _, test := range []string{"gpu", "command"} {
		log := rec + "train-1/raw/train.gpu/single.log"
		params := map[string]string(nil)
		if test == "command" {
			log, params = "../../testdata/field/train/torchtitan-checkpoint-debug/train.log", map[string]string{"command": "x"}
		}
		p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Params: params,
			Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}},
			Outputs:  []plan.Output{{Step: "single", Log: log, ExitCode: 1}}})
		assert.NilError(t, err)
		assert.Assert(t, strings.Contains(strings.Join(failed(p), ","), "exit status single"), "%s: %v", test, failed(p))
	}
	// One hostile line (a host that is no host name, a line over the
	// limit, a loss that is no number) is skipped and said, not allowed
	// to lose the run's other steps.
	hostile := filepath.Join(dir, "hostile.log")
	extra := `{"kind":"train_step","gpu":1,"step":1,"loss":1,"tokens_per_s":1,"host":"bad host"}` + "\n" +
		`{"kind":"train_step","gpu":0,"step":31,"loss":{"x":1},"tokens_per_s":1,"host":"vm"}` + "\n" + strings.Repeat("x", 70<<10) + "\n"
	assert.NilError(t, os.WriteFile(hostile, append(append([]byte(nil), whole...), extra...), 0o644))
	p = parse(t, "gpu", nil, hostile)
	assert.Equal(t, p.Error, "")
	assert.Assert(t, len(p.Metrics) > 2, p.Metrics)
	var warned string
	for _, c := range p.Checks {
		if c.Name == "lines read" {
			warned = c.Message
		}
	}
	assert.Assert(t, strings.Contains(warned, "3 line(s)") && strings.Contains(warned, `host "bad host" is no host name`), warned)

	// A log file the command was to write and did not is an error.
	p, err = Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "command", Params: map[string]string{"command": "x", "log": "train.log"},
		Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}},
		Outputs:  []plan.Output{{Step: "command", Log: "../../testdata/field/train/torchtitan-checkpoint-debug/train.log"}}})
	assert.NilError(t, err)
	assert.ErrorContains(t, errOf(p), "the log file train.log (parameter log) was not written")
}

func errOf(p result.Parsed) error {
	if p.Error == "" {
		return nil
	}
	return &parseErr{p.Error}
}

type parseErr struct{ s string }

func (e *parseErr) Error() string { return e.s }

// Plan runs the embedded script once per node in the mode of the test,
// and the site's command under bash; bad parameters name themselves.
func TestPlan(t *testing.T) {
	topo := plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}
	cases := []struct {
		test   string
		params map[string]string
		want   string // a fragment of the argv, joined by spaces
		err    string
	}{
		{"gpu", nil, "--mode single --gpus all", ""},
		{"node", map[string]string{"model": "qwen2.5-7b", "layers": "4"}, "--mode ddp --gpus all --layers 4 --model qwen2.5-7b", ""},
		{"command", map[string]string{"command": "bash examples/run_pretrain.sh"}, "bash -c bash examples/run_pretrain.sh", ""},
		{"gpu", map[string]string{"model": "llama"}, "", `parameter model: "llama" is not one of`},
		{"gpu", map[string]string{"layers": "0"}, "", `parameter layers: "0" is not auto or a positive layer count`},
		{"gpu", map[string]string{"steps": "5"}, "", "parameter steps: 5 steps leave none after the 5 of warm-up"},
		{"command", nil, "", "parameter command: required"},
		{"command", map[string]string{"command": "x", "log": "../etc/passwd"}, "", "must be a path inside the step's working folder"},
		{"step", nil, "", "unknown test train.step"},
	}
	for _, c := range cases {
		t.Run(c.test+" "+c.want+c.err, func(t *testing.T) {
			p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: c.test, Params: c.params, Topology: topo})
			if c.err != "" {
				assert.ErrorContains(t, err, c.err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, len(p.Steps), 1)
			s := p.Steps[0]
			assert.Equal(t, s.Procs, 2)
			assert.Equal(t, s.ProcsPerNode, 1)
			argv := strings.Join(s.Argv, " ")
			assert.Assert(t, strings.Contains(argv, c.want), argv[max(0, len(argv)-200):])
		})
	}
}

// FuzzReadBench: any output is read or refused with an error, never a
// panic.
func FuzzReadBench(f *testing.F) {
	for _, p := range []string{rec + "train-1/raw/train.gpu/single.log", rec + "nan/raw/train.gpu/single.log", rec + "ddp.log"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"kind": "train_step", "gpu": 0, "loss": "inf", "warmup": 3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b bench
		_ = readBench(bytes.NewReader(data), "fuzz.log", &b)
		var p result.Parsed
		judgeBench(&p, plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}, b)
	})
}
