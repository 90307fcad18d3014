package burnin

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// BenchmarkBurnIn10k runs a burn-in of 10^4 cycles through Run (the
// cross-cycle judge, the record kept and written after every cycle),
// each cycle one of the H100's and H200's real node runs of
// testdata/recordings (every third the H200 clock-locked one, so that
// failures and drift findings accumulate as in a bad burn-in), and
// reports time per cycle, the heap in use after 10^3 and after 10^4
// cycles (flat: what Run holds does not grow with the cycles), and the
// process's peak RSS (scripts/bench-burnin.sh).
func BenchmarkBurnIn10k(b *testing.B) {
	runs := []*result.Run{}
	for _, rel := range []string{"h100x1-2026-12-07/issue30/node-4", "h200x1-2026-12-01/node/node-1", "h200x1-2026-12-01/node/lgc"} {
		runs = append(runs, recorded(b, rel, map[bool]string{true: "h100", false: "h200"}[rel[:4] == "h100"]))
	}
	const cycles = 10000
	for range b.N {
		dir := b.TempDir()
		var at1k uint64
		start := time.Now()
		_, err := Run(context.Background(), Options{Plan: Plan{Cycles: cycles, Drift: DefaultDrift}, Dir: dir, SKU: "h100", Suite: "burnin",
			RunCycle: func(_ context.Context, n int, _, _ string) (*result.Run, error) {
				if n == 1000 {
					at1k = heapInUse()
				}
				r := *runs[n%len(runs)]
				r.Status = result.Pass
				if n%3 == 2 {
					r.Status = result.Fail
				}
				return &r, nil
			}})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		at10k := heapInUse()
		b.ReportMetric(float64(took.Microseconds())/cycles, "us/cycle")
		b.ReportMetric(float64(at1k)/(1<<20), "heap-MiB@1e3")
		b.ReportMetric(float64(at10k)/(1<<20), "heap-MiB@1e4")
		b.ReportMetric(peakRSS(), "peak-RSS-MiB")
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// peakRSS is the process's peak resident set (VmHWM of
// /proc/self/status), in MiB; 0 where there is none.
func peakRSS() float64 {
	data, err := os.ReadFile(filepath.Join("/proc", "self", "status"))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseFloat(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 64)
			return kb / 1024
		}
	}
	return 0
}
