package record

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// FuzzLoad: no results.json, however broken, panics Load, and every sample
// it accepts has a test name and a valid scope.
func FuzzLoad(f *testing.F) {
	for _, p := range []string{"../../testdata/recordings/h200x2-2026-11-30/ga-mpi/results.json", "../../testdata/recordings/h200x2-2026-11-30-final/p2poff/results.json"} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"scope":"2x8","tests":[{"name":"nccl.all_reduce[a.log]","status":"pass","metrics":[{"name":"busbw","value":1,"size":8}]}]}`))
	f.Add([]byte(`{"tests":[{"name":"x","scope":"0x1","metrics":[{}]}]}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, layout.Results)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Skip()
		}
		ss, err := Load(p)
		if err != nil {
			return
		}
		for _, s := range ss {
			if s.Scope.Nodes < 1 || s.Scope.GPUsPerNode < 1 {
				t.Fatalf("accepted scope %v", s.Scope)
			}
		}
		if entries, err := Record(ss, declared(t)); err == nil {
			if _, err := sku.Parse([]byte("sku: f\nbaselines:\n"+Render(entries)), "f.yaml"); err != nil && len(entries) > 0 {
				// Runs of absurd values (NaN, 1e308) may not band; they
				// must not panic, which reaching here shows.
				_ = err
			}
		}
	})
}

// FuzzMerge: merging into any SKU file text either fails with an error or
// gives a file that parses.
func FuzzMerge(f *testing.F) {
	f.Add([]byte(skuFile))
	if data, err := os.ReadFile("../../baselines/h200.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("sku: x\n"))
	f.Add([]byte("sku: x\nbaselines: []\nsuites: {}\n"))
	v := 1.0
	entries := []*sku.Entry{{Test: "nccl.all_reduce", Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}, Metric: "busbw", Unit: "GB/s", Value: &v,
		Band: mustBand(10, 5, 50), Source: "fuzz: \"quoted\" #hash\n"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Merge(data, "f.yaml", entries, "note")
		if err != nil {
			return
		}
		if _, err := sku.Parse(out, "f.yaml"); err != nil {
			t.Fatalf("Merge returned a file that does not parse: %v", err)
		}
	})
}
