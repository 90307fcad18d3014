package sku

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

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
			assert.Assert(t, CitesDatasheet(c.Source), "%s line %d: ceiling %s source names no datasheet, specification, seed or page: %q", name, c.Line, c.Metric, c.Source)
			assert.Assert(t, c.Link != "", "%s line %d: ceiling %s names no link", name, c.Line, c.Metric)
		}
	}
	assert.Assert(t, n > 100, "only %d ceilings: the catalog lost its SKUs", n)
}

// Every baseline entry gpuaccept ships was measured on someone else's
// hardware (a seed's cluster, a public page, this project's machines): it
// judges a site's nodes as a reference, never as the site's own golden
// recording, and says where it comes from.
func TestShippedEntriesAreReference(t *testing.T) {
	cat, err := Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	n := 0
	for _, name := range cat.Names() {
		for _, e := range cat.SKUs[name].Baselines {
			n++
			assert.Equal(t, e.Kind(), result.BasisReference, "%s line %d: %s entry is not marked basis: reference", name, e.Line, e.Test)
			assert.Assert(t, e.Source != "", "%s line %d: %s entry has no source", name, e.Line, e.Test)
		}
	}
	assert.Assert(t, n >= 70, "only %d entries: the catalog lost its baselines", n)
}

// entryCitation is what a reference entry's source must name besides what
// a ceiling may (citation): a GitHub issue, a file of a repository at a
// commit (owner/repo@commit path), or a file of this project (a seed,
// testdata/...).

// Every reference entry names where its number can be read again: a URL,
// an issue, a repository file at a commit, a seed or a recording (issue 30:
// a first run judges on a cited authority, so the citation must be
// checkable, not "a public page").
func TestShippedReferenceEntriesCiteTheirSource(t *testing.T) {
	cat, err := Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	n := 0
	for _, name := range cat.Names() {
		for _, e := range cat.SKUs[name].Baselines {
			if e.Kind() != result.BasisReference {
				continue
			}
			n++
			assert.Assert(t, CitesMeasurement(e.Source),
				"%s line %d: reference entry %s at %s names no URL, issue, repository file or seed: %q", name, e.Line, e.Test, e.Scope, e.Source)
		}
	}
	assert.Assert(t, n >= 70, "only %d reference entries: the catalog lost its baselines", n)
}

// The citation rules accept what the shipped entries cite and refuse a
// source that names nothing one could open.
func TestEntryCitationRules(t *testing.T) {
	for _, c := range []struct {
		source string
		ok     bool
	}{
		{"https://docs.alayanew.com/en/docs/tech-blog/2026-05-06-nccl-tests (2026-05-06)", true},
		{"oracle-quickstart/oci-gpu-quickstarts@6a0abdc78b574b28eb10926387615c8414ed8c1d nvidia/B300/README-B300.md#L117-L129", true},
		{"NVIDIA/nccl-tests issue #294, 2 x 8 H100", true},
		{"seed 004 T10: Dispatch Average row, line 509", true},
		{"seeds/001_e8de1ba5afd618dc.txt line 41", true},
		{"median of 8 runs ...; runs: testdata/recordings/h200x2-2026-11-30/direct-1/all_reduce.log", true},
		{"a public page: 8 x H100 reach 460 GB/s", false},
		{"measured on our cluster last week", false},
	} {
		got := CitesMeasurement(c.source)
		assert.Equal(t, got, c.ok, c.source)
	}
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

// skuYAML is a SKU file of name whose description is desc.
func skuYAML(name, desc string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("sku: " + name + "\ndescription: " + desc + "\nbaselines:\n  - {test: a.b, scope: {nodes: 1, gpus_per_node: 1}, metric: m, unit: us, source: s, value: 1, band: {max: '+5%'}}\n")}
}

// A site's folder adds its SKUs to the built-in ones and replaces the
// built-in SKU of a name it also has; each SKU says where it comes from,
// and its file is read back byte for byte from there.
func TestCatalogOverlay(t *testing.T) {
	builtin := fstest.MapFS{"a.yaml": skuYAML("a", "built-in a"), "b.yaml": skuYAML("b", "built-in b")}
	cases := []struct {
		name       string
		site       fstest.MapFS
		wantDesc   map[string]string // SKU -> description
		wantSource map[string]string
		overridden []string
	}{
		{"adds", fstest.MapFS{"c.yaml": skuYAML("c", "site c")},
			map[string]string{"a": "built-in a", "b": "built-in b", "c": "site c"},
			map[string]string{"a": BuiltIn, "b": BuiltIn, "c": "site/c.yaml"}, nil},
		{"overrides", fstest.MapFS{"b.yaml": skuYAML("b", "site b")},
			map[string]string{"a": "built-in a", "b": "site b"},
			map[string]string{"a": BuiltIn, "b": "site/b.yaml"}, []string{"b"}},
		{"both", fstest.MapFS{"b.yaml": skuYAML("b", "site b"), "a.yaml": skuYAML("a", "site a"), "d.yaml": skuYAML("d", "site d")},
			map[string]string{"a": "site a", "b": "site b", "d": "site d"},
			map[string]string{"a": "site/a.yaml", "b": "site/b.yaml", "d": "site/d.yaml"}, []string{"a", "b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base, err := LoadBuiltIn(builtin)
			assert.NilError(t, err)
			site, err := Load(c.site, "site")
			assert.NilError(t, err)
			got, over := base.Overlay(site)
			assert.DeepEqual(t, over, c.overridden)
			desc, source := map[string]string{}, map[string]string{}
			for _, n := range got.Names() {
				desc[n], source[n] = got.SKUs[n].Description, got.SKUs[n].Source
				data, err := got.File(n)
				assert.NilError(t, err)
				from := fs.FS(builtin)
				if source[n] != BuiltIn {
					from = c.site
				}
				want, err := fs.ReadFile(from, n+".yaml")
				assert.NilError(t, err)
				assert.Equal(t, string(data), string(want), "%s: the file of its source", n)
			}
			assert.DeepEqual(t, desc, c.wantDesc)
			assert.DeepEqual(t, source, c.wantSource)
			// The built-in catalog is not changed by the overlay.
			assert.Equal(t, base.SKUs["b"].Description, "built-in b")
			assert.Equal(t, len(base.SKUs), 2)
		})
	}
}

// A bad site file fails the load with its name (it is not skipped, which
// would fall back on the built-in SKU of its name unsaid); File of a SKU
// not in the catalog is an error naming it.
func TestCatalogSiteErrors(t *testing.T) {
	cases := []struct {
		name string
		site fstest.MapFS
		want string
	}{
		{"misnamed", fstest.MapFS{"x.yaml": skuYAML("y", "d")}, `site/x.yaml: holds sku "y": name the file after its SKU (y.yaml)`},
		{"not YAML", fstest.MapFS{"h100.yaml": {Data: []byte("sku: [h100\n")}}, "site/h100.yaml: line 1: yaml:"},
		{"empty", fstest.MapFS{}, "no SKU files (*.yaml) in site"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.site, "site")
			assert.ErrorContains(t, err, c.want)
		})
	}
	cat, err := LoadBuiltIn(fstest.MapFS{"a.yaml": skuYAML("a", "d")})
	assert.NilError(t, err)
	_, err = cat.File("z")
	assert.ErrorContains(t, err, "SKU z: no SKU file loaded")
}

// Every shipped SKU loads as built-in, its File the embedded file itself.
func TestBuiltInSources(t *testing.T) {
	cat, err := LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	assert.Assert(t, len(cat.SKUs) > 0)
	for _, n := range cat.Names() {
		s := cat.SKUs[n]
		assert.Equal(t, s.Source, BuiltIn, n)
		assert.Equal(t, s.File, "baselines/"+n+".yaml")
		data, err := cat.File(n)
		assert.NilError(t, err)
		want, err := baselines.FS.ReadFile(n + ".yaml")
		assert.NilError(t, err)
		assert.Equal(t, string(data), string(want), n)
	}
}
