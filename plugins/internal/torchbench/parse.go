package torchbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
	"github.com/gpuaccept/gpuaccept/plugins/internal/toolfail"
)

// lineMax bounds the bytes of one line kept: a record is a few hundred
// bytes; the rest of a longer line is read and dropped.
const lineMax = 64 << 10

// diagMax bounds the diagnostics kept per output.
const diagMax = 50

// At is where a record was read: its line and the node it names.
type At struct {
	// Line is the 1-based line of the output.
	Line int
	// Host is the record's "host", the node's host name; "" in outputs of
	// script versions before the field (host unknown).
	Host string
}

// GEMM is a "gemm" record: one dense matmul measurement on one GPU.
type GEMM struct {
	At
	// GPU is the device index on its node.
	GPU int
	// Name is the device model torch reports ("NVIDIA H200").
	Name string
	// DType is the script's dtype: bf16, fp16, fp8, tf32, fp32.
	DType string
	// M, N, K are the matrix dimensions; Iters the timed launches.
	M, N, K int64
	Iters   int
	// Seconds is the best repeat's time of Iters launches.
	Seconds float64
	// TFLOPS is 2*M*N*K*Iters / Seconds / 1e12.
	TFLOPS float64
	// Skipped, when set, says why the dtype was not measured (no fp8
	// matmul on this GPU); the numbers are then zero.
	Skipped string
	// Concurrent says all the node's GPUs ran at once (--concurrent).
	Concurrent bool
}

// HBM is an "hbm" record: device memory bandwidth of one GPU.
type HBM struct {
	At
	GPU int
	// Op is "copy" (2 x Bytes moved per launch) or "triad" (3 x Bytes).
	Op string
	// Bytes is one array's size in bytes.
	Bytes int64
	// GBps is the bandwidth in GB/s (1e9 bytes/s).
	GBps float64
}

// Copy is an "h2d" or "d2h" record: host↔device bandwidth of one GPU.
type Copy struct {
	At
	GPU int
	// Direction is "h2d" or "d2h".
	Direction string
	Bytes     int64
	// Pinned says the host buffer was page-locked.
	Pinned bool
	// GBps is the bandwidth in GB/s (1e9 bytes/s).
	GBps float64
	// Placement is where the copy ran; nil in outputs of script versions
	// before the field (placement not recorded) or when it was unreadable
	// (a diagnostic says why).
	Placement *Placement
}

// Placement is the "placement" of an h2d or d2h record: where the process
// and its pinned buffer were, and the state of the GPU's host link, so
// that a low figure can be told from a badly placed process.
type Placement struct {
	// BDF is the GPU's PCI address ("0000:19:00.0"); "" when unknown.
	BDF string `json:"bdf"`
	// NUMANode is the GPU's NUMA node; -1 where the host exposes none
	// (one-node hosts, VMs).
	NUMANode int `json:"numa_node"`
	// CPUs is the cpulist the copying thread was bound to ("48-95");
	// "" when unbound, Unbound then says why ("--numa off", "the host
	// gives 0000:19:00.0 no NUMA node (numa_node -1)").
	CPUs    string `json:"cpus"`
	Unbound string `json:"unbound"`
	// MemPolicy is how the buffer's memory was steered: "preferred N
	// (libnuma)", "first touch" (binding only) or "default".
	MemPolicy string `json:"mempolicy"`
	// BufferNodes are the NUMA nodes holding the pinned buffer's pages,
	// node number -> pages; BufferSource says how they were found
	// ("move_pages, sampled pages", "numa_maps, pages of the mapping").
	// Empty when unknown, BufferUnknown then says why.
	BufferNodes   map[string]int64 `json:"buffer_nodes"`
	BufferSource  string           `json:"buffer_source"`
	BufferUnknown string           `json:"buffer_unknown"`
	// IOMMU is "on" (/sys/class/iommu has a unit), "off" or "unknown";
	// IOMMUCmdline the kernel command line's iommu flags ("intel_iommu=on
	// iommu=pt"); IOMMUDomain the type of the GPU's IOMMU group
	// ("identity": passthrough; "DMA", "DMA-FQ": translated), "" unknown.
	IOMMU        string `json:"iommu"`
	IOMMUCmdline string `json:"iommu_cmdline"`
	IOMMUDomain  string `json:"iommu_domain"`
	// Nodes are the host's NUMA nodes with their memory.
	Nodes []NodeMemory `json:"nodes"`
	// Link is the GPU's PCIe link as sysfs printed it right after the
	// copies; its fields are "" when unreadable.
	Link Link `json:"link"`
}

// NodeMemory is one NUMA node's memory, in KiB as
// /sys/devices/system/node/nodeN/meminfo prints it ("kB").
type NodeMemory struct {
	Node    int   `json:"node"`
	TotalKB int64 `json:"total_kb"`
	FreeKB  int64 `json:"free_kb"`
}

// Link is a PCIe link's state as sysfs prints it: speeds "32.0 GT/s
// PCIe", widths "16".
type Link struct {
	CurrentSpeed string `json:"current_speed"`
	CurrentWidth string `json:"current_width"`
	MaxSpeed     string `json:"max_speed"`
	MaxWidth     string `json:"max_width"`
}

// P2P is a "p2p" record: a copy from GPU Src to GPU Dst of one node.
type P2P struct {
	At
	Src, Dst int
	Bytes    int64
	// PeerAccess is torch.cuda.can_device_access_peer(Src, Dst).
	PeerAccess bool
	// GBps is the bandwidth in GB/s (1e9 bytes/s).
	GBps float64
}

// Info is an "info" record: what torch sees on a node.
type Info struct {
	At
	// Torch, CUDA and HIP are torch.__version__, torch.version.cuda and
	// torch.version.hip ("" when null).
	Torch, CUDA, HIP string
	// GPUs is torch.cuda.device_count(); Names the devices' names by index.
	GPUs  int
	Names []string
}

// Error is an "error" record (the script could not measure, and says
// why), or a Python traceback in the output.
type Error struct {
	At
	Message string
	// Stray marks a line of another program that says the tool could
	// not run (toolfail: "bash: python3: command not found"): it explains
	// missing results (Complete) but is no warning of its own, since a
	// login profile's stray line may stand in a complete log.
	Stray bool
}

// Output is what one output of the script holds, in line order.
type Output struct {
	GEMM   []GEMM
	HBM    []HBM
	Copies []Copy
	P2P    []P2P
	Infos  []Info
	Errors []Error
	// Diags are the lines that are no record (not JSON, another kind, a
	// record missing a field), "name:line: why", at most diagMax of them
	// and a count of the rest.
	Diags []string
	// Records counts the records read.
	Records int
}

// record is the union of every kind's fields as the script writes them.
type record struct {
	Kind       *string  `json:"kind"`
	Host       string   `json:"host"`
	GPU        *int     `json:"gpu"`
	Name       string   `json:"name"`
	DType      string   `json:"dtype"`
	M          int64    `json:"m"`
	N          int64    `json:"n"`
	K          int64    `json:"k"`
	Iters      int      `json:"iters"`
	Seconds    float64  `json:"seconds"`
	TFLOPS     *float64 `json:"tflops"`
	Skipped    string   `json:"skipped"`
	Concurrent bool     `json:"concurrent"`
	Op         string   `json:"op"`
	Bytes      int64    `json:"bytes"`
	GBps       *float64 `json:"gbps"`
	Pinned     bool     `json:"pinned"`
	Src        *int     `json:"src"`
	Dst        *int     `json:"dst"`
	PeerAccess bool     `json:"peer_access"`
	Torch      string   `json:"torch"`
	CUDA       *string  `json:"cuda"`
	HIP        *string  `json:"hip"`
	GPUs       int      `json:"gpus"`
	Names      []string `json:"names"`
	Message    string   `json:"message"`
	// Placement is decoded apart, so that a malformed one costs the
	// placement and not the figure.
	Placement json.RawMessage `json:"placement"`
}

// Parse reads the script's output from r (name names it in diagnostics,
// "default.jsonl:3: ..."). Lines a launcher or log collector prefixed
// (mpirun --tag-output, srun --label) are read past their prefix. A line
// that is not a JSON object, or an object that is no record of the
// script, is a diagnostic, not an error: a combined log holds the
// script's stderr too. A "Traceback (most recent call last):" line is an
// Error: the script died there, of the exception its first line not
// indented names. A line that is no record but says the tool could not
// run or the device failed (toolfail.Classify: "bash: python3: command
// not found") is an Error too. The error is r's read error only.
func Parse(r io.Reader, name string) (Output, error) {
	var o Output
	diags := textdiag.List{Max: diagMax, TextMax: 200, What: "lines that are no record"}
	br := bufio.NewReaderSize(r, 64<<10)
	tb := -1 // the Error of a traceback whose exception line is still to come
	for n := 1; ; n++ {
		line, read, err := textdiag.ReadLine(br, lineMax)
		if !read {
			if err != nil && err != io.EOF {
				return o, fmt.Errorf("read %s: %w", name, err)
			}
			break
		}
		rest := line[textdiag.PrefixLen(line):]
		text := strings.TrimSpace(rest)
		switch {
		case text == "":
		case strings.HasPrefix(text, "Traceback (most recent call last)"):
			o.Errors = append(o.Errors, Error{At: At{Line: n}, Message: "Python traceback: the script died"})
			tb = len(o.Errors) - 1
		case text[0] != '{':
			diags.Add(n, "not a JSON object: "+text)
			indented := rest[0] == ' ' || rest[0] == '\t'
			switch {
			case tb >= 0 && !indented:
				// The traceback's first line not indented is the exception
				// ("RuntimeError: CUDA error: uncorrectable ECC error
				// encountered"): what the script died of.
				o.Errors[tb].Message = "Python traceback: " + textdiag.Clip(text, 500)
				tb = -1
			case tb < 0:
				// A line of the tool's stderr that says it could not run
				// ("bash: python3: command not found") or that the device
				// failed: an error the gates read (toolfail).
				if k, _ := toolfail.Classify(text); k != toolfail.Unknown {
					o.Errors = append(o.Errors, Error{At: At{Line: n}, Message: textdiag.Clip(text, 500), Stray: true})
				}
			}
		default:
			if why := o.add(text, n); why != "" {
				diags.Add(n, why)
			}
		}
		if err != nil {
			if err != io.EOF {
				return o, fmt.Errorf("read %s: %w", name, err)
			}
			break
		}
	}
	for _, d := range diags.Done() {
		o.Diags = append(o.Diags, d.In(name))
	}
	return o, nil
}

// add reads one JSON line into o; it returns why the line is no record,
// "" when it is one.
func (o *Output) add(text string, line int) string {
	why, placementWhy := o.addRecord(text, line)
	if why == "" && placementWhy != "" {
		return placementWhy
	}
	return why
}

// addRecord reads one JSON line into o; it returns why the line is no
// record, "" when it is one, and why a record's placement was dropped.
func (o *Output) addRecord(text string, line int) (string, string) {
	var r record
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&r); err != nil {
		return fmt.Sprintf("not JSON (%v): %s", err, textdiag.Clip(text, 120)), ""
	}
	if dec.More() {
		return "more than one JSON value on the line: " + textdiag.Clip(text, 120), ""
	}
	if r.Kind == nil {
		return "a JSON object without \"kind\": " + textdiag.Clip(text, 120), ""
	}
	at := At{Line: line, Host: r.Host}
	need := func(what string, ok bool) string {
		if ok {
			return ""
		}
		return fmt.Sprintf("a %s record without %s", *r.Kind, what)
	}
	gpuOK := r.GPU != nil && *r.GPU >= 0 && *r.GPU < 1<<20
	positive := func(v *float64) bool { return v != nil && *v > 0 && !math.IsInf(*v, 0) }
	switch *r.Kind {
	case "gemm":
		if why := need("a GPU index", gpuOK); why != "" {
			return why, ""
		}
		if why := need("a dtype", r.DType != ""); why != "" {
			return why, ""
		}
		if r.Skipped == "" {
			if why := need("a positive tflops", positive(r.TFLOPS)); why != "" {
				return why, ""
			}
		}
		g := GEMM{At: at, GPU: *r.GPU, Name: r.Name, DType: r.DType, M: r.M, N: r.N, K: r.K, Iters: r.Iters,
			Seconds: r.Seconds, Skipped: r.Skipped, Concurrent: r.Concurrent}
		if r.TFLOPS != nil && r.Skipped == "" {
			g.TFLOPS = *r.TFLOPS
		}
		o.GEMM = append(o.GEMM, g)
	case "hbm":
		if why := need("a GPU index", gpuOK); why != "" {
			return why, ""
		}
		if why := need("op copy or triad", r.Op == "copy" || r.Op == "triad"); why != "" {
			return why, ""
		}
		if why := need("a positive gbps", positive(r.GBps)); why != "" {
			return why, ""
		}
		o.HBM = append(o.HBM, HBM{At: at, GPU: *r.GPU, Op: r.Op, Bytes: r.Bytes, GBps: *r.GBps})
	case "h2d", "d2h":
		if why := need("a GPU index", gpuOK); why != "" {
			return why, ""
		}
		if why := need("a positive gbps", positive(r.GBps)); why != "" {
			return why, ""
		}
		c := Copy{At: at, GPU: *r.GPU, Direction: *r.Kind, Bytes: r.Bytes, Pinned: r.Pinned, GBps: *r.GBps}
		var placementWhy string
		if len(r.Placement) > 0 && string(r.Placement) != "null" {
			var p Placement
			if err := json.Unmarshal(r.Placement, &p); err != nil {
				placementWhy = fmt.Sprintf("a %s record's placement is unreadable (%v); the figure is kept", *r.Kind, err)
			} else {
				c.Placement = &p
			}
		}
		o.Copies = append(o.Copies, c)
		o.Records++
		return "", placementWhy
	case "p2p":
		ok := r.Src != nil && r.Dst != nil && *r.Src >= 0 && *r.Dst >= 0 && *r.Src < 1<<20 && *r.Dst < 1<<20
		if why := need("src and dst GPU indices", ok); why != "" {
			return why, ""
		}
		if why := need("a positive gbps", positive(r.GBps)); why != "" {
			return why, ""
		}
		o.P2P = append(o.P2P, P2P{At: at, Src: *r.Src, Dst: *r.Dst, Bytes: r.Bytes, PeerAccess: r.PeerAccess, GBps: *r.GBps})
	case "info":
		in := Info{At: at, Torch: r.Torch, GPUs: r.GPUs, Names: r.Names}
		if r.CUDA != nil {
			in.CUDA = *r.CUDA
		}
		if r.HIP != nil {
			in.HIP = *r.HIP
		}
		o.Infos = append(o.Infos, in)
	case "error":
		msg := r.Message
		if msg == "" {
			msg = "(no message)"
		}
		o.Errors = append(o.Errors, Error{At: at, Message: textdiag.Clip(msg, 500)})
	default:
		return fmt.Sprintf("a record of unknown kind %q", textdiag.Clip(*r.Kind, 40)), ""
	}
	o.Records++
	return "", ""
}

// Hosts returns the hosts the records name, sorted, "" (unknown) included
// when a record names none.
func (o Output) Hosts() []string {
	seen := map[string]bool{}
	for _, in := range o.Infos {
		seen[in.Host] = true
	}
	for _, g := range o.GEMM {
		seen[g.Host] = true
	}
	for _, h := range o.HBM {
		seen[h.Host] = true
	}
	for _, c := range o.Copies {
		seen[c.Host] = true
	}
	for _, p := range o.P2P {
		seen[p.Host] = true
	}
	out := make([]string, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// Merge appends the records of b to o (the outputs of several steps of
// one test).
func (o *Output) Merge(b Output) {
	o.GEMM = append(o.GEMM, b.GEMM...)
	o.HBM = append(o.HBM, b.HBM...)
	o.Copies = append(o.Copies, b.Copies...)
	o.P2P = append(o.P2P, b.P2P...)
	o.Infos = append(o.Infos, b.Infos...)
	o.Errors = append(o.Errors, b.Errors...)
	o.Diags = append(o.Diags, b.Diags...)
	o.Records += b.Records
}

// Sniff says head (the first bytes of an output) looks like the script's:
// its first non-blank line, past any launcher prefix, is a JSON object
// with a "kind" of the script.
func Sniff(head []byte) bool {
	for _, line := range bytes.Split(head, []byte("\n")) {
		line = bytes.TrimSpace(line[textdiag.PrefixLen(line):])
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' {
			return false
		}
		for _, k := range []string{"info", "gemm", "hbm", "h2d", "d2h", "p2p", "error"} {
			if bytes.Contains(line, []byte(`"kind": "`+k+`"`)) || bytes.Contains(line, []byte(`"kind":"`+k+`"`)) {
				return true
			}
		}
		return false
	}
	return false
}
