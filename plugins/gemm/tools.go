package gemm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

// Point is one GEMM figure another tool printed.
type Point struct {
	// Line is the 1-based line of the output.
	Line int
	// GPU names the device: an index ("0") for hipBLASLt and rocBLAS (the
	// "Device ID N" line, else "0"), RVS's KFD GPU ID ("28851") for gst.
	GPU string
	// DType is the label (dtypeLabels); "unknown" when the output names
	// no type (rocblas-bench -r without type columns).
	DType string
	// M, N, K are the problem's dimensions (0 where the output has none).
	M, N, K int64
	// TFLOPS is the tool's GFLOPS / 1000.
	TFLOPS float64
	// Met is RVS's verdict against its target ("met: TRUE"), nil when the
	// tool gives none.
	Met *bool
	// Target is RVS's target in TFLOPS, 0 when none.
	Target float64
}

// ToolOutput is what parseTool read from another tool's output.
type ToolOutput struct {
	// Tool is "hipblaslt-bench", "rocblas-bench" or "rvs gst".
	Tool   string
	Points []Point
	// Device is the device model the output names ("AMD Radeon VII"), ""
	// when none.
	Device string
	// Diags are "name:line: why" notes on lines not understood.
	Diags []string
	// host is the host the launcher ran the step on, "" when unknown.
	host string
}

// sniffTool names the tool whose output head is, "" for none of them.
func sniffTool(head []byte) string {
	switch {
	case bytes.Contains(head, []byte("hipblaslt-Gflops")):
		return "hipblaslt-bench"
	case bytes.Contains(head, []byte("rocblas-Gflops")):
		return "rocblas-bench"
	case bytes.Contains(head, []byte("[RESULT]")) && (bytes.Contains(head, []byte("Module name :gst")) || gstLine.Match(head)):
		return "rvs gst"
	}
	return ""
}

var (
	// "Device ID 0 : AMD Radeon VII gfx906:sramecc+:xnack-"
	deviceLine = regexp.MustCompile(`^Device ID (\d+) : (.*?)(?: gfx[0-9a-f]+\S*)?\s*$`)
	// "[RESULT] [1102003.864648] [ACTION] [GPU:: 28851] GFLOPS 1687129 Target GFLOPS: 1215000 met: TRUE"
	gstLine = regexp.MustCompile(`\[RESULT\]\s*\[[^\]]*\]\s*\[([^\]]+)\]\s*\[GPU::\s*(\d+)\]\s*GFLOPS\s+([0-9.eE+-]+)(?:\s+Target GFLOPS:\s*([0-9.eE+-]+)\s+met:\s*(TRUE|FALSE))?`)
)

// parseTool reads the output of tool (sniffTool's name) from r; name names
// it in diagnostics. Lines the parser does not understand are diagnostics;
// the error is r's read error only.
func parseTool(r io.Reader, name, tool string) (ToolOutput, error) {
	out := ToolOutput{Tool: tool}
	diags := textdiag.List{Max: 30, TextMax: 200, What: "lines not understood"}
	br := bufio.NewReaderSize(r, 64<<10)
	var header []string
	gpu := "0"
	// RVS prints a GFLOPS line every log interval and the verdict line
	// last; the verdict line's figure is the one kept per action and GPU.
	lastGST := map[string]int{}
	for n := 1; ; n++ {
		line, read, err := textdiag.ReadLine(br, 64<<10)
		if !read {
			if err != nil && err != io.EOF {
				return out, fmt.Errorf("read %s: %w", name, err)
			}
			break
		}
		text := strings.TrimSpace(line[textdiag.PrefixLen(line):])
		if m := deviceLine.FindStringSubmatch(text); m != nil {
			gpu = m[1]
			if out.Device == "" {
				out.Device = m[2]
			}
		}
		switch tool {
		case "rvs gst":
			if m := gstLine.FindStringSubmatch(text); m != nil {
				p, why := gstPoint(m, n)
				if why != "" {
					diags.Add(n, why)
					break
				}
				key := m[1] + "|" + m[2]
				if i, ok := lastGST[key]; ok && out.Points[i].Met == nil {
					out.Points[i] = p
				} else if !ok {
					lastGST[key] = len(out.Points)
					out.Points = append(out.Points, p)
				}
			}
		default:
			// hipblaslt-bench prefixes a solution's header with "[N]:" under
			// --algo_method all (rocm-libraries pull request 3066).
			if i := strings.Index(text, "]:"); strings.HasPrefix(text, "[") && i > 0 {
				if _, err := strconv.Atoi(text[1:i]); err == nil {
					text = text[i+2:]
				}
			}
			fields := strings.Split(text, ",")
			for i := range fields {
				fields[i] = strings.TrimSpace(fields[i])
			}
			if isHeader(fields) {
				header = fields
				break
			}
			if header == nil || len(fields) < 3 || !strings.Contains(text, ",") {
				break
			}
			if len(fields) != len(header) {
				diags.Add(n, fmt.Sprintf("%d fields, the header (%s) has %d: cut short or not a result row", len(fields), tool, len(header)))
				break
			}
			p, why := csvPoint(header, fields, n, gpu)
			if why != "" {
				diags.Add(n, why)
				break
			}
			out.Points = append(out.Points, p)
		}
		if err != nil {
			if err != io.EOF {
				return out, fmt.Errorf("read %s: %w", name, err)
			}
			break
		}
	}
	for _, d := range diags.Done() {
		out.Diags = append(out.Diags, d.In(name))
	}
	return out, nil
}

func isHeader(fields []string) bool {
	for _, f := range fields {
		if f == "hipblaslt-Gflops" || f == "rocblas-Gflops" {
			return true
		}
	}
	return false
}

func gflops(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil && v > 0 && !math.IsInf(v, 0)
}

// tflops converts a GFLOPS figure s (gflops accepted it) to TFLOPS by
// moving its decimal exponent, so that "14.5966" becomes 0.0145966 and
// not the 0.014596600000000001 of a division.
func tflops(s string) float64 {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err == nil {
			mant, exp = s[:i], e
		}
	}
	v, err := strconv.ParseFloat(mant+"e"+strconv.Itoa(exp-3), 64)
	if err != nil {
		g, _ := strconv.ParseFloat(s, 64)
		return g / 1000
	}
	return v
}

// csvPoint reads a hipblaslt-bench or rocblas-bench result row under its
// header.
func csvPoint(header, fields []string, line int, gpu string) (Point, string) {
	col := map[string]string{}
	for i, h := range header {
		if _, dup := col[strings.ToLower(h)]; !dup {
			col[strings.ToLower(h)] = fields[i]
		}
	}
	g := col["hipblaslt-gflops"]
	if g == "" {
		g = col["rocblas-gflops"]
	}
	if _, ok := gflops(g); !ok {
		return Point{}, fmt.Sprintf("GFLOPS %q is not a positive finite number", textdiag.Clip(g, 40))
	}
	p := Point{Line: line, GPU: gpu, TFLOPS: tflops(g)}
	p.M, _ = strconv.ParseInt(col["m"], 10, 64)
	p.N, _ = strconv.ParseInt(col["n"], 10, 64)
	p.K, _ = strconv.ParseInt(col["k"], 10, 64)
	p.DType = blasDType(col["a_type"], col["d_type"], col["compute_type"])
	return p, ""
}

// gstPoint reads an RVS gst GFLOPS line (gstLine's groups).
func gstPoint(m []string, line int) (Point, string) {
	if _, ok := gflops(m[3]); !ok {
		return Point{}, fmt.Sprintf("GFLOPS %q is not a positive finite number", textdiag.Clip(m[3], 40))
	}
	p := Point{Line: line, GPU: m[2], TFLOPS: tflops(m[3]), DType: actionDType(m[1])}
	if m[5] != "" {
		met := m[5] == "TRUE"
		p.Met = &met
		if _, ok := gflops(m[4]); ok {
			p.Target = tflops(m[4])
		}
	}
	return p, ""
}

// blasTypes maps rocBLAS/hipBLASLt datatype names (rocblas_datatype,
// hipDataType's bench names) to the dtype labels.
var blasTypes = map[string]string{
	"f16_r": "fp16", "h": "fp16", "bf16_r": "bf16", "f32_r": "fp32", "s": "fp32", "f64_r": "fp64", "d": "fp64",
	"f8_r": "fp8", "f8_fnuz_r": "fp8", "bf8_r": "fp8e5m2", "bf8_fnuz_r": "fp8e5m2", "i8_r": "int8",
	"f4_r": "fp4", "f6_r": "fp6", "bf6_r": "fp6",
}

// blasDType names the dtype of a row from its input type (a_type; older
// hipblaslt-bench print only d_type) and compute type: f32 inputs computed
// as xf32 are tf32.
func blasDType(a, d, compute string) string {
	t := a
	if t == "" {
		t = d
	}
	l, ok := blasTypes[t]
	if !ok {
		return "unknown"
	}
	if l == "fp32" && (compute == "xf32_r" || compute == "f32_xf32_r") {
		return "tf32"
	}
	return l
}

// actionDType names the dtype of an RVS action from its name, which RVS's
// own configurations spell with the type ("gst-1215Tflops-4K4K8K-rand-fp8",
// "gst-1000Tflops-8KB-fp8_r-false", "gpustress-9000-sgemm-false").
func actionDType(action string) string {
	a := strings.ToLower(action)
	for _, c := range []struct{ token, label string }{
		{"bf16", "bf16"}, {"fp16", "fp16"}, {"hgemm", "fp16"}, {"xf32", "tf32"}, {"tf32", "tf32"},
		{"fp8", "fp8"}, {"i8", "int8"}, {"int8", "int8"}, {"fp64", "fp64"}, {"dgemm", "fp64"}, {"fp32", "fp32"}, {"sgemm", "fp32"},
	} {
		if strings.Contains(a, c.token) {
			return c.label
		}
	}
	return "unknown"
}
