package history

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// Bench sizes: a fleet of benchNodes nodes of 8 GPUs, each node run
// benchRuns times, each run 8 GPUs x 5 tests x 25 sizes = 1,000 points:
// 10^6 points in all.
const (
	benchNodes = 125
	benchRuns  = 8
	benchSizes = 25
)

var benchTests = []string{"nccl.all_reduce", "nccl.all_gather", "nccl.reduce_scatter", "nccl.alltoall", "hbm.bandwidth"}

// benchRun is the n-th run (of benchNodes x benchRuns) and its 1,000
// points.
func benchRun(n int, start time.Time) (Run, []Point) {
	node, round := n%benchNodes, n/benchNodes
	host := fmt.Sprintf("node%03d", node)
	at := start.Add(time.Duration(round) * 24 * time.Hour).Add(time.Duration(node) * time.Second)
	r := Run{Digest: fmt.Sprintf("sha256:%064x", n), Folder: "/bench/" + strconv.Itoa(n), SKU: "h100", Suite: "node", Scope: "1x8",
		Launcher: "local", Status: "pass", Started: at, Version: "bench", Command: "run", Imported: at}
	points := make([]Point, 0, 8*len(benchTests)*benchSizes)
	for g := range 8 {
		for _, test := range benchTests {
			for s := range benchSizes {
				points = append(points, Point{Test: test, Metric: "busbw", Labels: map[string]string{"host": host, "gpu": strconv.Itoa(g), "placement": "out-of-place"},
					Size: 1 << (10 + s), Value: 300 + float64(s) - float64(round), Unit: "GB/s", Band: ">= 270", Status: "pass", Basis: "golden", At: at,
					Host: host, GPUUUID: fmt.Sprintf("GPU-%03d-%d", node, g), GPUSerial: fmt.Sprintf("16516%03d%05d", node, g)})
			}
		}
	}
	return r, points
}

// peakRSS is this process's peak resident set (VmHWM), in MiB.
func peakRSS(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/self/status")
	assert.NilError(b, err)
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			assert.NilError(b, err)
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// BenchmarkStore inserts 10^6 points (1,000 runs of 1,000) into a fresh
// store, then reads one GPU's trend (its nccl.all_reduce busbw over its
// 8 runs, 200 points) and its whole history (1,000 points). Run one store
// a process, so that the peak RSS is its own (scripts/bench-history.sh):
//
//	go test ./framework/history -run '^$' -bench 'BenchmarkStore/sqlite' -benchtime 1x
func BenchmarkStore(b *testing.B) {
	for _, st := range stores() {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			s := open(b, st.new(b))
			start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			b.ResetTimer()
			t0 := time.Now()
			for n := range benchNodes * benchRuns {
				r, ps := benchRun(n, start)
				added, err := s.Insert(ctx, r, ps)
				assert.NilError(b, err)
				assert.Assert(b, added)
			}
			insert := time.Since(t0)
			serial := fmt.Sprintf("16516%03d%05d", 42, 3)
			t1 := time.Now()
			trend, err := s.Points(ctx, Filter{GPU: serial, Test: "nccl.all_reduce", Metric: "busbw"})
			assert.NilError(b, err)
			query := time.Since(t1)
			assert.Equal(b, len(trend), benchRuns*benchSizes)
			t2 := time.Now()
			all, err := s.Points(ctx, Filter{GPU: serial})
			assert.NilError(b, err)
			whole := time.Since(t2)
			assert.Equal(b, len(all), benchRuns*benchSizes*len(benchTests))
			b.StopTimer()
			b.ReportMetric(insert.Seconds(), "insert-s")
			b.ReportMetric(float64(benchNodes*benchRuns*1000)/insert.Seconds(), "points/s")
			b.ReportMetric(float64(query.Microseconds())/1000, "trend-ms")
			b.ReportMetric(float64(whole.Microseconds())/1000, "gpu-history-ms")
			b.ReportMetric(peakRSS(b), "peak-RSS-MiB")
		})
	}
}
