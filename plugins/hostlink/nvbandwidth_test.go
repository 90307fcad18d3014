package hostlink

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

const nvbDir = "testdata/nvbandwidth/"

// metricAt returns the value of the one metric named name whose labels
// include want (key, value pairs), failing the test unless exactly one
// matches.
func metricAt(t *testing.T, p result.Parsed, name string, want ...string) float64 {
	t.Helper()
	var found []result.Metric
	for _, m := range p.Metrics {
		if m.Name != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(want); i += 2 {
			if m.Labels[want[i]] != want[i+1] {
				ok = false
			}
		}
		if ok {
			found = append(found, m)
		}
	}
	assert.Assert(t, len(found) == 1, "%s %v: %d metrics match", name, want, len(found))
	return found[0].Value
}

func checkNamed(p result.Parsed, name string) *result.Check {
	for i := range p.Checks {
		if p.Checks[i].Name == name {
			return &p.Checks[i]
		}
	}
	return nil
}

func countMetrics(p result.Parsed, name string) int {
	n := 0
	for _, m := range p.Metrics {
		if m.Name == name {
			n++
		}
	}
	return n
}

func diagsAt(p result.Parsed, level result.Level) []result.Diagnostic {
	var out []result.Diagnostic
	for _, d := range p.Diagnostics {
		if d.Level == level {
			out = append(out, d)
		}
	}
	return out
}

// Real outputs: values at known cells, the number of metrics (every cell
// but the diagonal's N/A), the versions and the GPU model.
func TestNvbandwidthRealOutputs(t *testing.T) {
	for _, c := range []struct {
		file    string
		bw, lat int
		cells   []struct {
			want   float64
			labels []string
		}
		info      map[string]string
		checksOK  []string
		waivedMsg string
	}{
		{
			file: "azure-nhc-h100x8-d2d-read-ce-v0.4.txt",
			bw:   56, // 8 x 8 without the diagonal
			cells: []struct {
				want   float64
				labels []string
			}{
				// "GPU(row) -> GPU(column)": src is the row.
				{372.05, []string{"src", "2", "dst", "0", "testcase", "device_to_device_memcpy_read_ce"}},
				{370.26, []string{"src", "0", "dst", "6"}},
				{372.96, []string{"src", "2", "dst", "4"}},
			},
			info: map[string]string{"nvbandwidthversion": "v0.4", "nvbandwidthgitversion": "v0.4.2-12-g8857188",
				"cudaversion": "12020", "cudadriverversion": "12080", "driverversion": "570.133.20", "gpu": "NVIDIA H100 80GB HBM3"},
			checksOK: []string{"p2p paths device_to_device_memcpy_read_ce"},
		},
		{
			file: "superbench-gh200-v0.6.txt",
			bw:   20, lat: 1,
			cells: []struct {
				want   float64
				labels []string
			}{
				{323.36, []string{"testcase", "host_to_device_memcpy_ce", "direction", "h2d", "gpu", "0", "cpu", "1"}},
				{312.11, []string{"testcase", "device_to_host_memcpy_ce", "direction", "d2h", "gpu", "1"}},
				// "<->" host testcases report the direction their name starts with.
				{176.92, []string{"testcase", "host_to_device_bidirectional_memcpy_ce", "direction", "h2d", "gpu", "0"}},
				{187.26, []string{"testcase", "device_to_host_bidirectional_memcpy_ce", "direction", "d2h", "gpu", "0"}},
				{187.00, []string{"testcase", "all_to_host_bidirectional_memcpy_ce", "direction", "d2h"}},
				{360.93, []string{"testcase", "host_to_all_memcpy_sm", "direction", "h2d"}},
				{351.93, []string{"testcase", "device_to_host_memcpy_sm", "direction", "d2h", "gpu", "0"}},
			},
			info:      map[string]string{"nvbandwidthversion": "v0.6", "cudaversion": "12040", "driverversion": "550.54.15", "gpu": "NVIDIA GH200 480GB"},
			waivedMsg: "17 testcases were waived",
		},
		{
			file: "dcgm-1gpu-verbose-v0.5.json",
			bw:   14, lat: 1,
			cells: []struct {
				want   float64
				labels []string
			}{
				{12.3964, []string{"testcase", "host_to_device_memcpy_ce", "direction", "h2d", "gpu", "0"}},
				{13.2001, []string{"testcase", "device_to_host_memcpy_ce", "direction", "d2h", "gpu", "0"}},
				{9.83679, []string{"testcase", "all_to_host_bidirectional_memcpy_sm", "direction", "d2h"}},
			},
			info:      map[string]string{"nvbandwidthversion": "v0.5", "cudaversion": "12070", "driverversion": "565.02"},
			waivedMsg: "17 testcases were waived (nvbandwidth found nothing they apply to): device_to_device_memcpy_read_ce",
		},
	} {
		t.Run(c.file, func(t *testing.T) {
			p, err := parseNvbandwidth(nvbDir + c.file)
			assert.NilError(t, err)
			assert.Equal(t, p.Error, "")
			assert.Equal(t, countMetrics(p, metricBW), c.bw)
			assert.Equal(t, countMetrics(p, metricLatency), c.lat)
			for _, cell := range c.cells {
				assert.Equal(t, metricAt(t, p, metricBW, cell.labels...), cell.want, "%v", cell.labels)
			}
			for k, v := range c.info {
				assert.Equal(t, p.Info[k], v, k)
			}
			for _, name := range c.checksOK {
				ck := checkNamed(p, name)
				assert.Assert(t, ck != nil && ck.OK, "%s: %+v", name, ck)
			}
			for _, ck := range p.Checks {
				assert.Assert(t, ck.OK, "%+v", ck)
			}
			if c.waivedMsg != "" {
				infos := diagsAt(p, result.Info)
				assert.Assert(t, len(infos) == 1 && strings.Contains(infos[0].Message, c.waivedMsg), "%+v", infos)
			}
			for _, m := range p.Metrics {
				assert.Assert(t, m.Labels["testcase"] != "", "%+v", m)
				assert.Assert(t, m.Value > 0, "%+v", m)
			}
		})
	}
}

// The latency matrix is in ns and becomes us; the JSON's the same.
func TestNvbandwidthLatencyInMicroseconds(t *testing.T) {
	p, err := parseNvbandwidth(nvbDir + "superbench-gh200-v0.6.txt")
	assert.NilError(t, err)
	v := metricAt(t, p, metricLatency, "testcase", "host_device_latency_sm", "gpu", "0")
	assert.Assert(t, math.Abs(v-0.77258) < 1e-9, "%v", v)
	p, err = parseNvbandwidth(nvbDir + "dcgm-1gpu-verbose-v0.5.json")
	assert.NilError(t, err)
	v = metricAt(t, p, metricLatency, "testcase", "host_device_latency_sm")
	assert.Assert(t, math.Abs(v-0.649879) < 1e-9, "%v", v)
}

// Degraded copies of real outputs: an N/A off the diagonal fails the path
// check, a cut output keeps what it read and errors at its last line, an
// Error testcase and an N/A host-link cell are checks.
func TestNvbandwidthDegraded(t *testing.T) {
	t.Run("N/A GPU 3 -> GPU 5", func(t *testing.T) {
		p, err := parseNvbandwidth(nvbDir + "degraded-azure-h100x8-na-3-5.txt")
		assert.NilError(t, err)
		assert.Equal(t, p.Error, "")
		assert.Equal(t, countMetrics(p, metricBW), 55)
		ck := checkNamed(p, "p2p paths device_to_device_memcpy_read_ce")
		assert.Assert(t, ck != nil && !ck.OK && !ck.Warn && !ck.Error, "%+v", ck)
		assert.Assert(t, strings.Contains(ck.Message, "GPU 3 -> GPU 5") && !strings.Contains(ck.Message, "GPU 0 -> GPU 0"), ck.Message)
		// The edited cell's line, not the matrix heading's (21).
		assert.Assert(t, strings.HasPrefix(ck.Message, "degraded-azure-h100x8-na-3-5.txt:26:"), ck.Message)
	})
	t.Run("N/A on two rows", func(t *testing.T) {
		// The degraded copy with a second edit: row 6 column 1 (371.79,
		// line 29) to N/A. The message starts at the first cell and names
		// each cell's line.
		path := filepath.Join(t.TempDir(), "two.txt")
		data, err := os.ReadFile(nvbDir + "degraded-azure-h100x8-na-3-5.txt")
		assert.NilError(t, err)
		l := strings.SplitAfter(string(data), "\n")
		assert.Assert(t, strings.HasPrefix(l[28], "6    371.41    371.79 "), l[28])
		l[28] = strings.Replace(l[28], "371.79", "   N/A", 1)
		assert.NilError(t, os.WriteFile(path, []byte(strings.Join(l, "")), 0o644))
		p, err := parseNvbandwidth(path)
		assert.NilError(t, err)
		ck := checkNamed(p, "p2p paths device_to_device_memcpy_read_ce")
		assert.Assert(t, ck != nil && !ck.OK, "%+v", ck)
		assert.Assert(t, strings.HasPrefix(ck.Message, "two.txt:26: no P2P path measured for GPU 3 -> GPU 5 (line 26), GPU 6 -> GPU 1 (line 29) in "), ck.Message)
	})
	t.Run("matrix cut after row 5", func(t *testing.T) {
		p, err := parseNvbandwidth(nvbDir + "degraded-azure-h100x8-truncated.txt")
		assert.NilError(t, err)
		assert.Assert(t, strings.HasPrefix(p.Error, "degraded-azure-h100x8-truncated.txt:28: ") && strings.Contains(p.Error, "cut short"), p.Error)
		assert.Equal(t, countMetrics(p, metricBW), 6*7)
		assert.Equal(t, metricAt(t, p, metricBW, "src", "5", "dst", "3"), 372.18)
		// No verdict on paths from a matrix with rows missing, and the
		// diagonal of the rows read is no N/A pair.
		assert.Assert(t, checkNamed(p, "p2p paths device_to_device_memcpy_read_ce") == nil, "%+v", p.Checks)
		probs := diagsAt(p, result.Problem)
		assert.Assert(t, len(probs) == 1 && probs[0].Source == "degraded-azure-h100x8-truncated.txt:28", "%+v", probs)
	})
	t.Run("JSON N/A host cell and Error testcase", func(t *testing.T) {
		p, err := parseNvbandwidth(nvbDir + "degraded-dcgm-1gpu-na-and-error.json")
		assert.NilError(t, err)
		assert.Equal(t, p.Error, "")
		assert.Equal(t, countMetrics(p, metricBW), 12)
		host := checkNamed(p, "host link host_to_device_memcpy_ce")
		assert.Assert(t, host != nil && !host.OK && !host.Error && strings.Contains(host.Message, "GPU 0"), "%+v", host)
		tc := checkNamed(p, "testcase device_to_host_memcpy_ce")
		assert.Assert(t, tc != nil && !tc.OK && tc.Error, "%+v", tc)
	})
	t.Run("JSON cut short", func(t *testing.T) {
		p, err := parseNvbandwidth(nvbDir + "degraded-dcgm-1gpu-truncated.json")
		assert.NilError(t, err)
		assert.Assert(t, strings.Contains(p.Error, "cut short") && strings.Contains(p.Error, "after 3 testcases"), p.Error)
		assert.Equal(t, countMetrics(p, metricBW), 3)
		assert.Equal(t, metricAt(t, p, metricBW, "testcase", "host_to_device_bidirectional_memcpy_ce"), 11.5031)
	})
}

// A text run cut between "Running X." and its matrix, and a file that is
// no nvbandwidth output: errors that name the file (and line).
func TestNvbandwidthNoResult(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(nvbDir + "azure-nhc-h100x8-d2d-read-ce-v0.4.txt")
	assert.NilError(t, err)
	// The real output up to its "Running" line (line 20).
	head := strings.Join(strings.SplitAfter(string(src), "\n")[:20], "")
	cut := filepath.Join(dir, "cut.log")
	assert.NilError(t, os.WriteFile(cut, []byte(head), 0o644))
	p, err := parseNvbandwidth(cut)
	assert.NilError(t, err)
	assert.Assert(t, strings.HasPrefix(p.Error, "cut.log:20: testcase device_to_device_memcpy_read_ce started"), p.Error)
	assert.Equal(t, p.Info["gpu"], "NVIDIA H100 80GB HBM3")

	other, err := os.ReadFile("testdata/transferbench/mi350x-8gpu-p2p-v1.62.txt")
	assert.NilError(t, err)
	wrong := filepath.Join(dir, "tb.log")
	assert.NilError(t, os.WriteFile(wrong, other, 0o644))
	p, err = parseNvbandwidth(wrong)
	assert.NilError(t, err)
	assert.Assert(t, strings.HasPrefix(p.Error, "tb.log: no nvbandwidth result"), p.Error)
	assert.Equal(t, len(p.Metrics), 0)

	_, err = parseNvbandwidth(filepath.Join(dir, "missing.log"))
	assert.ErrorContains(t, err, "missing.log")
}

func TestSniff(t *testing.T) {
	for _, c := range []struct {
		file    string
		nvb, tb bool
	}{
		{nvbDir + "azure-nhc-h100x8-d2d-read-ce-v0.4.txt", true, false},
		{nvbDir + "superbench-gh200-v0.6.txt", true, false},
		{nvbDir + "dcgm-1gpu-verbose-v0.5.json", true, false},
		{"testdata/transferbench/mi350x-8gpu-p2p-v1.62.txt", false, true},
		{"../ibperf/testdata/issues/perftest-issue132-write-bw-a-gbits.txt", false, false},
	} {
		data, err := os.ReadFile(c.file)
		assert.NilError(t, err)
		head := data[:min(len(data), 1024)]
		assert.Equal(t, sniffNvbandwidth(head), c.nvb, c.file)
		assert.Equal(t, sniffTransferBench(head), c.tb, c.file)
	}
}

// FuzzParseNvbandwidth: any bytes, text or JSON, parse without a panic
// and give only finite, non-negative metrics with their labels.
func FuzzParseNvbandwidth(f *testing.F) {
	files, _ := filepath.Glob(nvbDir + "*.txt")
	js, _ := filepath.Glob(nvbDir + "*.json")
	for _, p := range append(files, js...) {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := parseNvbandwidth(path)
		if err != nil {
			t.Fatal(err)
		}
		hlCheckFinite(t, p)
	})
}

func hlCheckFinite(t *testing.T, p result.Parsed) {
	t.Helper()
	for _, m := range p.Metrics {
		if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) || m.Value < 0 {
			t.Fatalf("metric %+v is no measurement", m)
		}
		if len(m.Labels) == 0 || m.Unit == "" {
			t.Fatalf("metric %+v has no labels or unit", m)
		}
	}
	if len(p.Metrics) == 0 && p.Error == "" && len(p.Checks) == 0 {
		t.Fatalf("no metric, no check and no error: %+v", p)
	}
}
