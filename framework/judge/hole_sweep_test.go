package judge

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/plugins/nccl"
	"github.com/gpuaccept/gpuaccept/plugins/rccl"
)

// notHealthy are the real outputs whose curves the default dip rule is
// meant to fail, or that cross no link (baselines/README.md, rule 8a):
// left out of the sweep of healthy curves.
var notHealthy = []string{
	"h100-2x4-alltoall-nccl-failure-then-sendrecv", // sendrecv collapsing from 9 to 0.96 GB/s
	"mi355x-seed004-degraded",                      // degraded copies
	"gh200-4x4-int8-wrong-ll128-corruption",        // wrong data (LL128 corruption)
}

// The evidence of rule 8a (baselines/README.md): every busbw curve of every
// real nccl-tests and rccl-tests output in the repository (field cases,
// recordings, seeds; copies counted once), read as the default dip rule
// reads it (holeRatio), stays over sku.DefaultHole but for the outputs
// left out as not healthy and one-rank runs (busbw 0, or the 1e6 GB/s of a
// copy within one GPU). The worst are logged, for the README's table.
func TestDefaultHoleOverHealthyRealCurves(t *testing.T) {
	var files []string
	for _, g := range []string{"../../testdata/field/nccl-tests/*/*", "../../testdata/field/rccl-tests/*/*", "../../testdata/seeds/*",
		"../../testdata/recordings/*/*/raw/*/*.log", "../../testdata/recordings/*/*/*/raw/*/*.log", "../../testdata/recordings/*/*/*/*/raw/*/*.log"} {
		m, err := filepath.Glob(g)
		assert.NilError(t, err)
		files = append(files, m...)
	}
	tests := []string{"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv", "gather", "scatter", "hypercube"}
	type worst struct {
		curve string
		ratio float64
	}
	var got []worst
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, ".yaml") || strings.HasSuffix(f, ".md") || strings.HasSuffix(f, ".json") {
			continue
		}
		skip := false
		for _, n := range notHealthy {
			skip = skip || strings.Contains(f, n)
		}
		data, err := os.ReadFile(f)
		assert.NilError(t, err)
		if skip || !strings.Contains(string(data), "busbw") {
			continue
		}
		var ms []result.Metric
		for _, p := range []pluginapi.Plugin{nccl.Plugin{}, rccl.Plugin{}} {
			for _, test := range tests {
				parsed, err := p.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Topology: plan.Topology{}, Outputs: []plan.Output{{Step: test, Log: f}}})
				if err != nil || (parsed.Error != "" && strings.Contains(parsed.Error, "is output of")) {
					continue
				}
				for _, m := range parsed.Metrics {
					if m.Name == "busbw" && m.Size > 0 {
						ms = append(ms, m)
					}
				}
				if len(ms) > 0 {
					break
				}
			}
			if len(ms) > 0 {
				break
			}
		}
		groups := map[string][]result.Metric{}
		for _, m := range ms {
			k := curveKey(m)
			groups[k] = append(groups[k], m)
		}
		for k, pts := range groups {
			sort.SliceStable(pts, func(i, j int) bool { return pts[i].Size < pts[j].Size })
			peak := 0.0
			var sum strings.Builder
			for _, p := range pts {
				peak = max(peak, p.Value)
				fmt.Fprintf(&sum, "%d %g;", p.Size, p.Value)
			}
			if peak <= 0 || peak > 1e5 { // one rank: no link crossed
				continue
			}
			h := fmt.Sprintf("%x", sha256.Sum256([]byte(sum.String())))
			if seen[h] {
				continue
			}
			seen[h] = true
			r, at, n := holeRatio(pts)
			if n == 0 {
				continue
			}
			got = append(got, worst{fmt.Sprintf("%s %s: %s at %s", strings.TrimPrefix(f, "../../testdata/"), k, num(pts[at].Value), result.FormatBytes(pts[at].Size)), r})
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].ratio < got[j].ratio })
	assert.Assert(t, len(got) > 150, "only %d curves read", len(got))
	above := 0
	for i, w := range got {
		if i < 8 {
			t.Logf("%.3f %s", w.ratio, w.curve)
		}
		if w.ratio >= 0.9 {
			above++
		}
		assert.Check(t, 100*w.ratio >= sku.DefaultHole && !math.IsInf(w.ratio, 0), "healthy curve fails the default dip rule: %.3f %s", w.ratio, w.curve)
	}
	t.Logf("%d curves, %d at 0.9 or more", len(got), above)
}
