package hostlink

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

const tbDir = "testdata/transferbench/"

// The real MI350X p2p run: a value at known cells of every kind, the
// number of metrics (10 x 10 devices unidirectional; bidirectional three
// rows per device without the diagonal's N/A), the size per direction.
func TestTransferBenchRealOutput(t *testing.T) {
	p, err := parseTransferBench(tbDir + "mi350x-8gpu-p2p-v1.62.txt")
	assert.NilError(t, err)
	assert.Equal(t, p.Error, "")
	assert.Equal(t, countMetrics(p, metricBW), 100+200-20)
	assert.Equal(t, countMetrics(p, metricBWTotal), 100-10)
	for _, c := range []struct {
		name   string
		want   float64
		labels []string
	}{
		{metricBW, 45.07, []string{"mode", "unidirectional", "direction", "h2d", "gpu", "3", "cpu", "0"}},
		{metricBW, 54.24, []string{"mode", "unidirectional", "direction", "d2h", "gpu", "3", "cpu", "1"}},
		{metricBW, 2132.28, []string{"mode", "unidirectional", "direction", "local", "gpu", "0"}},
		{metricBW, 102.51, []string{"mode", "unidirectional", "direction", "h2h", "cpu", "0", "dst_cpu", "1"}},
		// The slow XGMI link of this run.
		{metricBW, 46.66, []string{"mode", "unidirectional", "src", "7", "dst", "1", "executor", "gfx"}},
		{metricBW, 57.39, []string{"mode", "unidirectional", "src", "0", "dst", "1"}},
		// "GPU 03 <-" under GPU 06: the copy from GPU 6 to GPU 3.
		{metricBW, 40.37, []string{"mode", "bidirectional", "stream", "2", "src", "6", "dst", "3"}},
		{metricBW, 38.96, []string{"mode", "bidirectional", "stream", "1", "src", "3", "dst", "6"}},
		// GPU 6's own run with GPU 3, the same direction as stream 2 above.
		{metricBW, 54.39, []string{"mode", "bidirectional", "stream", "1", "src", "6", "dst", "3"}},
		{metricBWTotal, 79.33, []string{"mode", "bidirectional", "src", "3", "dst", "6"}},
		// "CPU 00 <-" under GPU 03: GPU 3 to the host, under H2D load.
		{metricBW, 53.93, []string{"mode", "bidirectional", "stream", "2", "direction", "d2h", "gpu", "3", "cpu", "0"}},
		{metricBW, 44.78, []string{"mode", "bidirectional", "stream", "1", "direction", "h2d", "gpu", "3", "cpu", "0"}},
		{metricBWTotal, 98.71, []string{"mode", "bidirectional", "direction", "h2d", "gpu", "3", "cpu", "0"}},
	} {
		assert.Equal(t, metricAt(t, p, c.name, c.labels...), c.want, "%s %v", c.name, c.labels)
	}
	for _, m := range p.Metrics {
		assert.Equal(t, m.Size, int64(268435456), "%+v", m)
		assert.Equal(t, m.Unit, unitGBs)
	}
	for _, name := range []string{"p2p paths unidirectional", "p2p paths bidirectional"} {
		ck := checkNamed(p, name)
		assert.Assert(t, ck != nil && ck.OK, "%s: %+v", name, ck)
	}
}

func TestTransferBenchDegraded(t *testing.T) {
	t.Run("N/A GPU 7 -> GPU 1", func(t *testing.T) {
		p, err := parseTransferBench(tbDir + "degraded-mi350x-na-7-1.txt")
		assert.NilError(t, err)
		assert.Equal(t, p.Error, "")
		ck := checkNamed(p, "p2p paths unidirectional")
		assert.Assert(t, ck != nil && !ck.OK && !ck.Warn && !ck.Error, "%+v", ck)
		assert.Assert(t, strings.Contains(ck.Message, "GPU 7 -> GPU 1") && strings.HasPrefix(ck.Message, "degraded-mi350x-na-7-1.txt:15:"), ck.Message)
		// The row of the edited cell, and the table's heading by its line.
		assert.Assert(t, strings.HasSuffix(ck.Message, "in the unidirectional table (line 3)"), ck.Message)
		bi := checkNamed(p, "p2p paths bidirectional")
		assert.Assert(t, bi != nil && bi.OK, "%+v", bi)
		assert.Equal(t, countMetrics(p, metricBW), 100+200-20-1)
	})
	t.Run("cut in the bidirectional table", func(t *testing.T) {
		p, err := parseTransferBench(tbDir + "degraded-mi350x-truncated.txt")
		assert.NilError(t, err)
		assert.Assert(t, strings.HasPrefix(p.Error, "degraded-mi350x-truncated.txt:43: ") && strings.Contains(p.Error, "cut short"), p.Error)
		// The unidirectional table whole; bidirectionally CPU 00, CPU 01,
		// GPU 00-02 (27 cells each without the diagonal) and GPU 03's
		// "->" and "<-" rows.
		assert.Equal(t, countMetrics(p, metricBW)+countMetrics(p, metricBWTotal), 100+5*27+18)
		assert.Equal(t, metricAt(t, p, metricBW, "mode", "bidirectional", "stream", "2", "src", "6", "dst", "3"), 40.37)
		assert.Assert(t, checkNamed(p, "p2p paths bidirectional") == nil, "%+v", p.Checks)
		ck := checkNamed(p, "p2p paths unidirectional")
		assert.Assert(t, ck != nil && ck.OK, "%+v", ck)
	})
}

// nvbandwidth's output is no TransferBench output: the error names the
// file.
func TestTransferBenchNoTable(t *testing.T) {
	p, err := parseTransferBench(nvbDir + "azure-nhc-h100x8-d2d-read-ce-v0.4.txt")
	assert.NilError(t, err)
	assert.Assert(t, strings.HasPrefix(p.Error, "azure-nhc-h100x8-d2d-read-ce-v0.4.txt: no TransferBench p2p table"), p.Error)
	assert.Equal(t, len(p.Metrics), 0)
}

// FuzzParseTransferBench: any bytes parse without a panic and give only
// finite, non-negative metrics with their labels.
func FuzzParseTransferBench(f *testing.F) {
	files, _ := filepath.Glob(tbDir + "*.txt")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := parseTransferBench(path)
		if err != nil {
			t.Fatal(err)
		}
		hlCheckFinite(t, p)
	})
}
