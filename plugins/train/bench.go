package train

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/lines"
	"github.com/gpuaccept/gpuaccept/plugins/internal/trainlog"
)

// lineMax is the longest line read; trainbench.py's longest, an error
// with its traceback, is under 3 KiB.
const lineMax = 64 << 10

// config is trainbench.py's train_config line: what one GPU's process
// trains.
type config struct {
	Host         string  `json:"host"`
	GPU          int     `json:"gpu"`
	Rank         int     `json:"rank"`
	Model        string  `json:"model"`
	Layers       int     `json:"layers"`
	LayersFull   int     `json:"layers_full"`
	LayersWhy    string  `json:"layers_why"`
	Params       float64 `json:"params"`
	FlopsPerTok  float64 `json:"model_flop_per_tok"`
	Formula      string  `json:"formula"`
	Mode         string  `json:"mode"`
	WorldSize    int     `json:"world_size"`
	Seq          int     `json:"seq"`
	MicroBatch   int     `json:"micro_batch"`
	Steps        int     `json:"steps"`
	Warmup       int     `json:"warmup"`
	Name         string  `json:"name"`
	Torch        string  `json:"torch"`
	CUDA         *string `json:"cuda"`
	HIP          *string `json:"hip"`
	line         int
	stepsSeen    int
	peakMemGiB   float64
	tokens, tfls []float64
}

// benchLine is any line of trainbench.py's output.
type benchLine struct {
	Kind    string          `json:"kind"`
	Host    string          `json:"host"`
	GPU     *int            `json:"gpu"`
	Rank    int             `json:"rank"`
	Step    int             `json:"step"`
	Warmup  json.RawMessage `json:"warmup"` // a step's flag; the config's count
	Ms      float64         `json:"ms"`
	TPS     float64         `json:"tokens_per_s"`
	TFLOPS  float64         `json:"tflops"`
	PeakMem float64         `json:"peak_mem_gib"`
	Loss    json.RawMessage `json:"loss"`
	Error   string          `json:"error"`
	Message string          `json:"message"`
	Trace   string          `json:"traceback"`
}

// gpuKey names one GPU's process: host and GPU index.
type gpuKey struct {
	host string
	gpu  int
}

func (k gpuKey) String() string { return fmt.Sprintf("%s GPU %d", hostOr(k.host), k.gpu) }

// bench is trainbench.py's output, one log per GPU.
type bench struct {
	configs map[gpuKey]*config
	logs    map[gpuKey]*trainlog.Log
	// setup are the script's own "could not start" errors (no torch, no
	// GPU, bad --gpus), with their lines.
	setup []string
	// stray counts lines that are not the script's JSON (warnings on
	// stderr); a traceback among them with no error line is a crash.
	stray int
	trace []trainlog.Failure
	lines int
	// bad are the script's lines that could not be read (cut, garbled,
	// over lineMax, naming no valid host), "FILE:LINE: why": skipped, and
	// said, so one bad line does not lose the run's other steps.
	bad []string
}

// hostName is what a host name in the script's lines may be: what
// socket.gethostname() gives, never a space, quote or control character.
var hostName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)

// readBench reads trainbench.py's lines; name is the file's name for
// messages. It returns an error only for a read failure or an output
// that holds none of the script's lines.
func readBench(r io.Reader, name string, b *bench) error {
	if b.configs == nil {
		b.configs, b.logs = map[gpuKey]*config{}, map[gpuKey]*trainlog.Log{}
	}
	n, found := 0, 0
	err := lines.Each(r, lineMax, func(raw []byte, no int, long bool) {
		n = no
		b.line(raw, no, long, name, &found)
	})
	b.lines += n
	if err != nil {
		return fmt.Errorf("read %s at line %d: %w", name, n+1, err)
	}
	if found == 0 {
		return fmt.Errorf("%s: no trainbench.py line in %d line(s)", name, n)
	}
	return nil
}

// line reads one line of trainbench.py's output (n: its 1-based number;
// long: cut at lineMax) into b; found counts the script's lines.
func (b *bench) line(raw []byte, n int, long bool, name string, found *int) {
	if long {
		b.bad = append(b.bad, fmt.Sprintf("%s:%d: a line over %d bytes", name, n, lineMax))
		return
	}
	text := strings.TrimSpace(string(raw))
	if !strings.HasPrefix(text, "{") {
		if text != "" {
			b.stray++
			if kind := strayFailure(text); kind != "" {
				b.trace = append(b.trace, trainlog.Failure{Kind: kind, Line: n, Text: clip(text)})
			}
		}
		return
	}
	var l benchLine
	if err := json.Unmarshal([]byte(text), &l); err != nil || l.Kind == "" {
		b.stray++
		return
	}
	if l.Host != "" && !hostName.MatchString(l.Host) {
		b.bad = append(b.bad, fmt.Sprintf("%s:%d: host %q is no host name", name, n, clip(l.Host)))
		return
	}
	*found++
	gpu := -1
	if l.GPU != nil {
		gpu = *l.GPU
	}
	k := gpuKey{l.Host, gpu}
	switch l.Kind {
	case "train_config":
		c := &config{}
		if err := json.Unmarshal([]byte(text), c); err != nil {
			b.bad = append(b.bad, fmt.Sprintf("%s:%d: train_config: %v", name, n, err))
			return
		}
		c.line = n
		b.configs[k] = c
		lg := b.log(k)
		lg.Info = map[string]string{"model": c.Model, "layers": strconv.Itoa(c.Layers), "seq_length": strconv.Itoa(c.Seq),
			"micro_batch_size": strconv.Itoa(c.MicroBatch), "world_size": strconv.Itoa(c.WorldSize), "gpu": c.Name, "torchversion": c.Torch}
	case "train_step":
		loss, ok, err := lossOf(l.Loss)
		if err != nil {
			b.bad = append(b.bad, fmt.Sprintf("%s:%d: train_step loss: %v", name, n, err))
			return
		}
		lg := b.log(k)
		of := 0
		if c := b.configs[k]; c != nil {
			of = c.Steps
			c.stepsSeen++
			c.peakMemGiB = math.Max(c.peakMemGiB, l.PeakMem)
		}
		lg.Steps = append(lg.Steps, trainlog.Step{Iter: l.Step, Of: of, Line: n, Host: l.Host, GPU: strconv.Itoa(gpu),
			Warmup: string(l.Warmup) == "true", Millis: l.Ms, TFLOPSPerGPU: l.TFLOPS, TokensPerSecPerGPU: l.TPS, Loss: loss, HasLoss: ok, PeakMemGiB: l.PeakMem})
	case "error":
		msg := fmt.Sprintf("%s: %s", k, l.Message)
		if gpu < 0 { // the script's own, before any GPU started
			msg = fmt.Sprintf("%s: %s", hostOr(l.Host), l.Message)
		}
		switch l.Error {
		case "oom":
			b.log(k).Failures = append(b.log(k).Failures, trainlog.Failure{Kind: trainlog.KindOOM, Line: n, Text: clip(l.Message)})
		case "crash":
			b.log(k).Failures = append(b.log(k).Failures, trainlog.Failure{Kind: trainlog.KindCrash, Line: n, Text: clip(l.Message)})
		default:
			b.setup = append(b.setup, fmt.Sprintf("%s:%d: %s", name, n, msg))
		}
	}
}

func (b *bench) log(k gpuKey) *trainlog.Log {
	l := b.logs[k]
	if l == nil {
		l = &trainlog.Log{Writer: "trainbench", Formula: "6*N + 12*L*H*S (PaLM appendix B)"}
		b.logs[k] = l
	}
	return l
}

// keys are the GPUs seen, sorted by host then index.
func (b *bench) keys() []gpuKey {
	var ks []gpuKey
	for k := range b.logs {
		if k.gpu >= 0 {
			ks = append(ks, k)
		}
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].host != ks[j].host {
			return ks[i].host < ks[j].host
		}
		return ks[i].gpu < ks[j].gpu
	})
	return ks
}

// lossOf reads a loss: a number, or "nan", "inf", "-inf" (JSON has no
// NaN). A missing loss is no loss.
func lossOf(raw json.RawMessage) (float64, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, nil
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err == nil {
		return v, true, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, false, fmt.Errorf("%s is neither a number nor a string", raw)
	}
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), true, nil
	case "inf", "+inf":
		return math.Inf(1), true, nil
	case "-inf":
		return math.Inf(-1), true, nil
	}
	return 0, false, fmt.Errorf("%q is not a number, nan or inf", s)
}

// strayFailure tells a failure from what a non-JSON line says: a process
// killed before it could print its error line leaves only these.
func strayFailure(text string) string {
	l := strings.ToLower(text)
	switch {
	case strings.Contains(l, "out of memory"):
		return trainlog.KindOOM
	case strings.HasPrefix(text, "Traceback (most recent call last)"), strings.Contains(text, "Segmentation fault"):
		return trainlog.KindCrash
	}
	return ""
}

// hostOr is h, or "host unknown" for an output naming no host.
func hostOr(h string) string {
	if h == "" {
		return "host unknown"
	}
	return h
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}
