package sku

import (
	"regexp"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
)

// citation is what a ceiling's source must name: a vendor datasheet, data
// sheet, product brief, specifications or product page, a seed, or a
// public page by its address.
var citation = regexp.MustCompile(`(?i)datasheet|data sheet|product brief|specifications|product page|white paper|\bseed 0\d\d\b|https://`)

// Every ceiling of every built-in SKU cites where its figure comes from
// (issue 30: datasheet ceilings, each with its citation; a figure that
// cannot be found is left out, never guessed).
func TestShippedCeilingsCited(t *testing.T) {
	cat, err := Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	n := 0
	for _, name := range cat.Names() {
		for _, c := range cat.SKUs[name].Ceilings {
			n++
			assert.Assert(t, c.Source != "", "%s line %d: ceiling %s has no source", name, c.Line, c.Metric)
			assert.Assert(t, citation.MatchString(c.Source), "%s line %d: ceiling %s source names no datasheet, specification, seed or page: %q", name, c.Line, c.Metric, c.Source)
			assert.Assert(t, c.Link != "", "%s line %d: ceiling %s names no link", name, c.Line, c.Metric)
		}
	}
	assert.Assert(t, n > 100, "only %d ceilings: the catalog lost its SKUs", n)
}

// The generic data-centre SKUs (issue 30) each name their GPU family and
// carry the per-GPU datasheet ceilings their node suite is judged against:
// a busbw gate with the GPU link's peak, the HBM bandwidth and at least the
// BF16 matmul peak, each per GPU.
func TestCatalogCeilings(t *testing.T) {
	cat, err := Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	for _, name := range []string{"a100-40gb", "a100-80gb", "h100", "h100-nvl", "h100-pcie", "h200", "h200-nvl",
		"b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi350x", "mi355x"} {
		t.Run(name, func(t *testing.T) {
			s, err := cat.Get(name)
			assert.NilError(t, err)
			assert.Assert(t, s.GPU != "", "no gpu family")
			var busbw, hbm, bf16 bool
			for _, c := range s.Ceilings {
				switch {
				case c.Metric == "busbw" && !c.PerGPU:
					busbw = c.Peak > 0 && c.Peak <= c.Value
				case c.Metric == "bw" && c.PerGPU && len(c.Tests) == 1 && c.Tests[0] == "hbm.bandwidth":
					hbm = c.Value > 0
				case c.Metric == "tflops" && c.PerGPU && c.Labels["dtype"] == "bf16":
					bf16 = c.Value > 0
				}
			}
			assert.Assert(t, busbw, "no busbw gate with a peak at most the gate")
			assert.Assert(t, hbm, "no per-GPU HBM ceiling")
			assert.Assert(t, bf16, "no per-GPU BF16 matmul ceiling")
		})
	}
}
