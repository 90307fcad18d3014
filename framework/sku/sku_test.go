package sku

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/plan"
)

const good = `sku: t
description: test SKU
gpus_per_node: 2
suites:
  singlenode:
    nodes: 1
    params: {maxbytes: 4G}
    tests:
      - test: nccl.all_reduce
      - test: nccl.gemm
        skip: no plugin yet
baselines:
  - test: nccl.all_reduce
    scope: {nodes: 1, gpus_per_node: 2}
    metric: busbw
    unit: GB/s
    labels: {placement: out-of-place}
    band: {min: "-10%", warn_min: "-5%"}
    source: measured
    points:
      - {size: 1G, value: 330}
      - {size: 4294967296, value: 344, band: {min: ">= 300 GB/s"}}
`

func TestParseGood(t *testing.T) {
	s, err := Parse([]byte(good), "t.yaml")
	assert.NilError(t, err)
	assert.Equal(t, s.Name, "t")
	assert.Equal(t, len(s.Suites["singlenode"].Tests), 2)
	assert.Equal(t, s.Suites["singlenode"].Tests[1].Skip, "no plugin yet")
	e := s.Baselines[0]
	assert.Equal(t, e.Line, 13)
	assert.Equal(t, len(e.Points), 2)
	assert.Equal(t, e.Points[0].Size, Size(1<<30))
	assert.Equal(t, e.Points[1].Size, Size(4<<30))
	assert.Equal(t, e.Band.Min.Limit(344), 344*0.9)
	merged := e.Band.Merge(e.Points[1].Band)
	assert.Equal(t, merged.Min.Limit(344), 300.0)
	assert.Equal(t, merged.WarnMin.Text, "-5%")
	assert.DeepEqual(t, s.Scopes("nccl.all_reduce"), []plan.Scope{{Nodes: 1, GPUsPerNode: 2}})
	assert.Equal(t, len(s.Entries("nccl.all_reduce", plan.Scope{Nodes: 1, GPUsPerNode: 8})), 0)
}

// Every malformed file is rejected with the file, the line and the field.
func TestParseBad(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"typo in a field", "    band: {min", "    bnad: {min", `t.yaml: line 18: field "bnad" is not known here`},
		{"typo in a band edge", `{min: "-10%", warn_min`, `{mn: "-10%", warn_min`, `line 18: field "mn" is not known here`},
		{"relative floor written positive", `min: "-10%"`, `min: "10%"`, `line 18: field band.min: bound "10%": a floor`},
		{"absolute floor written as ceiling", `>= 300 GB/s`, `<= 300 GB/s`, `field band.min: bound "<= 300 GB/s": a floor (min, warn_min) is written with >=`},
		{"bits instead of bytes in a bound", `>= 300 GB/s`, `>= 300 Gb/s`, `line 22: field band.min: bound ">= 300 Gb/s" is in Gb/s but the entry's unit is GB/s`},
		{"no unit", "unit: GB/s", "unit: ''", `line 16: field unit: missing`},
		// The unit is the plugin's (skucheck): a typo still shows where a
		// bound names the unit.
		{"unit typo", "unit: GB/s", "unit: GBps", `line 22: field band.min: bound ">= 300 GB/s" is in GB/s but the entry's unit is GBps`},
		{"size not a size", "size: 1G", "size: lots", `line 21: size "lots": want bytes`},
		{"value not a number", "value: 330", "value: fast", "line 21: cannot unmarshal !!str `fast` into float64"},
		{"missing source", "    source: measured\n", "", "line 13: field source: missing"},
		{"warn zone outside the band", `warn_min: "-5%"`, `warn_min: "-20%"`, `warn_min -20% is below min -10%`},
		{"band that can never pass", `band: {min: "-10%", warn_min: "-5%"}`, `band: {min: ">= 400", max: "<= 300"}`, `no value can pass`},
		{"no band", `    band: {min: "-10%", warn_min: "-5%"}` + "\n", "", "field band: missing"},
		{"bad test name", "  - test: nccl.all_reduce\n    scope", "  - test: allreduce\n    scope", `line 13: field test: "allreduce" is not plugin.test`},
		{"bad scope", "scope: {nodes: 1,", "scope: {nodes: 0,", "field scope: nodes and gpus_per_node must be >= 1"},
		{"duplicate size", "size: 1G", "size: 4G", "t.yaml: line 22: field size: 4294967296 listed twice"},
		{"value and points", "    points:\n", "    value: 3\n    points:\n", "give exactly one of a single value or a list of points"},
		// yaml.v3 prints line 1 (0-based: the line after the unclosed "[",
		// where the parser found description:), issue 22.
		{"not YAML", "sku: t\n", "sku: [t\n", "t.yaml: line 2: yaml: did not find expected ',' or ']'"},
		{"suite test not a mapping", "      - test: nccl.all_reduce\n      - test: nccl.gemm", "      - nccl.all_reduce\n      - test: nccl.gemm", `line 9: want a mapping, got the value "nccl.all_reduce"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Assert(t, strings.Contains(good, c.from), "case does not apply: %q", c.from)
			_, err := Parse([]byte(strings.Replace(good, c.from, c.to, 1)), "t.yaml")
			assert.ErrorContains(t, err, c.want)
			assert.Assert(t, strings.HasPrefix(err.Error(), "t.yaml: "), err.Error())
		})
	}
}

func TestParseEmpty(t *testing.T) {
	_, err := Parse(nil, "e.yaml")
	assert.ErrorContains(t, err, "e.yaml: empty file")
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]Size{"8": 8, "4G": 4 << 30, "4 GiB": 4 << 30, "512K": 512 << 10, "8MiB": 8 << 20, "1T": 1 << 40} {
		got, err := ParseSize(in)
		assert.NilError(t, err, in)
		assert.Equal(t, got, want, in)
	}
	for _, in := range []string{"", "G", "-1", "1.5G", "99999999999T"} {
		_, err := ParseSize(in)
		assert.Assert(t, err != nil, in)
	}
}

// The shipped SKU files load and every value has a source.
func TestShippedBaselines(t *testing.T) {
	cat, err := Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	assert.Assert(t, is.Contains(cat.Names(), "h200"))
	h := cat.SKUs["h200"]
	assert.Assert(t, len(h.Entries("nccl.all_reduce", plan.Scope{Nodes: 1, GPUsPerNode: 2})) == 2)
	// Every value names where it comes from: a recording in the repository
	// (which must exist), a seed page, or a public page.
	for _, name := range cat.Names() {
		for _, e := range cat.SKUs[name].Baselines {
			cited := 0
			for _, w := range strings.FieldsFunc(e.Source, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '(' || r == ')' }) {
				w = strings.TrimSuffix(w, ":")
				switch {
				case strings.HasPrefix(w, "testdata/"):
					cited++
					_, err := os.Stat("../../" + w)
					assert.NilError(t, err, "%s: source of %s names a recording that is not in the repository", name, e.Test)
				case strings.HasPrefix(w, "seeds/0") && strings.HasSuffix(w, ".txt"), strings.HasPrefix(w, "https://"):
					cited++
				}
			}
			if regexp.MustCompile(`\bseed 0\d\d\b`).MatchString(e.Source) {
				cited++ // "seed 004 line 120"
			}
			assert.Assert(t, cited > 0, "%s line %d: source of %s names no recording, seed or page: %q", name, e.Line, e.Test, e.Source)
		}
	}
	_, err = cat.Get("h999")
	assert.ErrorContains(t, err, `unknown SKU "h999" (known: a100-40gb, a100-80gb, a100-ndmv4, b200, b200-a4, b300, gb200, gb200-a4x, gb300, h100, h100-nvl, h100-pcie, h200, h200-nvl, mi300x, mi325x, mi350x, mi355x, volcengine-hpcpni)`)
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(os.DirFS(dir), dir)
	assert.ErrorContains(t, err, "no SKU files (*.yaml) in "+dir)
	assert.NilError(t, os.WriteFile(dir+"/h200.yaml", []byte(good), 0o644))
	_, err = Load(os.DirFS(dir), dir)
	assert.ErrorContains(t, err, dir+`/h200.yaml: holds sku "t": name the file after its SKU (t.yaml)`)
}

// FuzzParse: no SKU file, however broken, panics the parser, and what it
// accepts validates.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(curveGood))
	for _, n := range []string{"h200.yaml", "a100-ndmv4.yaml", "volcengine-hpcpni.yaml", "mi355x.yaml"} {
		if data, err := baselines.FS.ReadFile(n); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("sku: x\nbaselines:\n  - {test: a.b, scope: {nodes: 1, gpus_per_node: 1}, metric: m, unit: us, source: s, value: 1, band: {max: '+5%'}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "f.yaml")
		if err != nil {
			// Every problem is of the file, at one of its lines.
			var p *Problems
			if !errors.As(err, &p) {
				t.Fatalf("%T, not *Problems: %v", err, err)
			}
			for _, x := range p.List {
				if x.File != "f.yaml" || x.Line < 0 || x.Line > bytes.Count(data, []byte("\n"))+1 {
					t.Fatalf("problem off the file: %+v", x)
				}
			}
			return
		}
		if s.Name == "" {
			t.Fatal("accepted a SKU without a name")
		}
		for _, e := range s.Baselines {
			if e.Source == "" || (e.Value == nil) == (len(e.Points) == 0) {
				t.Fatalf("accepted a malformed entry: %+v", e)
			}
			if e.Summary != "" && e.Value == nil || e.Dip != nil && e.Dip.Warn == 0 && e.Dip.Fail == 0 {
				t.Fatalf("accepted a malformed summary or dip: %+v", e)
			}
		}
		for _, c := range s.Ceilings {
			if c == nil || !(c.Value > 0) || c.Link == "" || c.Source == "" || unitProblem(c.Unit) != "" {
				t.Fatalf("accepted a malformed ceiling: %+v", c)
			}
		}
		if v := s.GPUVariant; v != nil && (len(v.Names) == 0 || s.GPU == "" || v.Policy() != VariantFail && v.Policy() != VariantWarn) {
			t.Fatalf("accepted a malformed gpu_variant: %+v", v)
		}
	})
}

func FuzzParseBoundAndSize(f *testing.F) {
	for _, s := range []string{"-10%", "+50%", ">= 310 GB/s", "<= 20 us", "4G", "4 GiB", "8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, lower := range []bool{true, false} {
			if b, err := ParseBound(s, lower); err == nil && b.Relative && lower && b.Percent > 0 {
				t.Fatalf("%q accepted as a floor above the reference", s)
			}
		}
		if v, err := ParseSize(s); err == nil && v < 0 {
			t.Fatalf("%q parsed to negative size %d", s, v)
		}
	})
}

// editLine replaces old by new on line n (1-based) of text, failing the test
// when the line does not hold old: the shipped file moved, and the case
// would test nothing.
func editLine(t *testing.T, text string, n int, old, new string) string {
	t.Helper()
	lines := strings.Split(text, "\n")
	assert.Assert(t, strings.Contains(lines[n-1], old), "line %d is %q, not %q", n, lines[n-1], old)
	lines[n-1] = strings.Replace(lines[n-1], old, new, 1)
	return strings.Join(lines, "\n")
}

// Errors name the line of the field at fault and the field, report every
// problem of the file (not the first), and a broken band does not hide a
// reference failing it. Cases edit a copy of the shipped mi355x file, as
// the user who found these did.
func TestProblemsNameFieldLineAndAll(t *testing.T) {
	// The copy of baselines/mi355x.yaml the user edited (before its warn
	// edges were added), so that the line numbers are theirs.
	data, err := os.ReadFile("testdata/mi355x-user-copy.yaml")
	assert.NilError(t, err)
	orig := string(data)
	cases := []struct {
		name  string
		edit  func(t *testing.T, s string) string
		want  []string // each a whole line of the error
		count int
	}{
		{
			name: "band that can never pass, inherited by points",
			edit: func(t *testing.T, s string) string {
				return editLine(t, s, 150, `band: {min: "-10%", warn_min: "-5%", warn_max: "+50%"}`, `band: {min: ">= 500 GB/s", max: "<= 450 GB/s"}`)
			},
			want:  []string{"mi355x.yaml: line 150: field band.min: min >= 500 GB/s is above max <= 450 GB/s: no value can pass"},
			count: 1,
		},
		{
			name: "an authority other than golden or reference",
			edit: func(t *testing.T, s string) string {
				return editLine(t, s, 148, `unit: GB/s`, "unit: GB/s\n    basis: datasheet")
			},
			want:  []string{`mi355x.yaml: line 149: field basis: "datasheet" is not golden (recorded on this site's hardware) or reference (a cited public measurement)`},
			count: 1,
		},
		{
			name: "a reference entry whose source cites nothing",
			edit: func(t *testing.T, s string) string {
				return editLine(t, s, 151, `source: "seed 004 T5`, "basis: reference\n    source: \"x\" # seed 004 T5")
			},
			want:  []string{`mi355x.yaml: line 152: field source: a reference entry judges other sites' hardware on its source's authority: name where the number can be read again (a URL, an issue, a repository file at a commit, a seed, a recording under testdata/), or leave basis out (golden: this site's own recording)`},
			count: 1,
		},
		{
			name: "absolute floor above the reference and the warn zone both reported",
			edit: func(t *testing.T, s string) string {
				return editLine(t, s, 212, `band: {min: "-10%", warn_min: "-5%"}`, `band: {min: ">= 900 GB/s", warn_min: "-5%"}`)
			},
			want: []string{
				"mi355x.yaml: line 212: field band.warn_min: warn_min -5% is below min >= 900 GB/s (348.1 and 900 for the reference 366.4): the warn zone would never be reached",
				"mi355x.yaml: line 213: field value: the reference 366.4 GB/s fails its own band (min >= 900 GB/s): a healthy system could never pass",
			},
			count: 2,
		},
		{
			name: "an internal key is not a field, and the rest of its entry is still checked",
			edit: func(t *testing.T, s string) string {
				s = editLine(t, s, 148, "unit: GB/s", "unit: ' GB/s'")
				return editLine(t, s, 150, `    band:`, "    fieldlines: 5\n    band:")
			},
			want: []string{
				`mi355x.yaml: line 148: field unit: " GB/s": want the unit on one line, without surrounding spaces`,
				`mi355x.yaml: line 150: field "fieldlines" is not known here (known: band, basis, ceiling, dip, labels, metric, points, range, scope, size, source, summary, test, unit, value)`,
			},
			count: 2,
		},
		{
			name: "problems in three entries and a point, in line order",
			edit: func(t *testing.T, s string) string {
				s = editLine(t, s, 156, "value: 395.27", "value: fast")
				s = editLine(t, s, 177, "unit: GB/s", `unit: ""`)
				s = editLine(t, s, 160, "scope: {nodes: 1,", "scope: {nodes: 0,")
				return editLine(t, s, 220, `band: {max: "+10%", warn_max: "+5%"}`, `band: {}`)
			},
			want: []string{
				"mi355x.yaml: line 156: cannot unmarshal !!str `fast` into float64",
				"mi355x.yaml: line 160: field scope: nodes and gpus_per_node must be >= 1, got 0x8",
				`mi355x.yaml: line 177: field unit: missing (the metric's unit, as its plugin declares it: gpuaccept list tests)`,
				`mi355x.yaml: line 215: field band: missing (give at least min or max)`,
			},
			count: 4,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.edit(t, orig)), "mi355x.yaml")
			assert.Assert(t, err != nil)
			var p *Problems
			assert.Assert(t, errors.As(err, &p), "%T", err)
			got := strings.Split(err.Error(), "\n")
			assert.DeepEqual(t, got, c.want)
			assert.Equal(t, len(p.List), c.count)
		})
	}
}

// More problems than MaxProblems: the first are listed, the rest counted.
func TestProblemsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("sku: t\nbaselines:\n")
	for i := 0; i < MaxProblems+5; i++ {
		b.WriteString("  - {test: a.b, scope: {nodes: 1, gpus_per_node: 1}, metric: m, unit: '', source: s, value: 1, band: {min: '-5%'}}\n")
	}
	_, err := Parse([]byte(b.String()), "t.yaml")
	lines := strings.Split(err.Error(), "\n")
	assert.Equal(t, len(lines), MaxProblems+1)
	assert.Equal(t, lines[0], `t.yaml: line 3: field unit: missing (the metric's unit, as its plugin declares it: gpuaccept list tests)`)
	assert.Equal(t, lines[MaxProblems], "t.yaml: and 5 more problems")
}

// A SKU file parses without its plugins: framework/sku knows no unit, so
// any unit on one line is syntax, and which side a band must bound is
// skucheck's to say from the plugin's declaration (TestBandDirection
// there). A unit the framework never saw parses like any other.
func TestUnitsAreThePlugins(t *testing.T) {
	const tmpl = "sku: t\nbaselines:\n  - {test: a.b, scope: {nodes: 1, gpus_per_node: 1}, metric: m, unit: %s, source: s, value: 100, band: %s}\n"
	cases := []struct {
		unit, band, want string
	}{
		{"tokens/s", `{min: "-10%"}`, ""},
		{"us", `{min: "-10%"}`, ""},
		{"GB/s", `{max: "+10%"}`, ""},
		{"samples/s", `{warn_max: "+5%"}`, ""},
		{"''", `{min: "-10%"}`, "t.yaml: line 3: field unit: missing"},
		{`"GB/s\n"`, `{min: "-10%"}`, `t.yaml: line 3: field unit: "GB/s\n": want the unit on one line`},
	}
	for _, c := range cases {
		t.Run(c.unit+" "+c.band, func(t *testing.T) {
			_, err := Parse([]byte(fmt.Sprintf(tmpl, c.unit, c.band)), "t.yaml")
			if c.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
		})
	}
}

func TestLabelText(t *testing.T) {
	for _, c := range []struct {
		labels map[string]string
		want   string
	}{
		{nil, ""},
		{map[string]string{"placement": "in-place"}, "placement=in-place"},
		{map[string]string{"type": "float", "placement": "out-of-place", "redop": "sum"}, "placement=out-of-place,redop=sum,type=float"},
	} {
		assert.Equal(t, LabelText(c.labels), c.want)
	}
}

// gpu_variant and ceilings: read with their lines, and every mistake
// rejected with file, line and field; a baseline reference above a
// physical ceiling could never be measured and is refused too.
func TestHardwareFields(t *testing.T) {
	const hw = `sku: t
gpus_per_node: 2
gpu: A100
gpu_variant:
  names: ["NVIDIA A100-SXM4-80GB"]
  other: warn
ceilings:
  - metric: busbw
    unit: GB/s
    value: 650
    link: NVLink 3
    tests: ["nccl.*"]
    source: NVIDIA A100 datasheet
suites:
  s:
    tests:
      - test: nccl.all_reduce
baselines:
  - test: nccl.all_reduce
    scope: {nodes: 1, gpus_per_node: 2}
    metric: busbw
    unit: GB/s
    band: {min: "-10%"}
    source: measured
    points:
      - {size: 1G, value: 230}
`
	s, err := Parse([]byte(hw), "t.yaml")
	assert.NilError(t, err)
	assert.Equal(t, s.GPUVariant.Policy(), VariantWarn)
	assert.Assert(t, s.GPUVariant.Is("nvidia  a100-sxm4-80gb"), "case and runs of spaces do not matter")
	assert.Assert(t, !s.GPUVariant.Is("NVIDIA A100-SXM4-40GB"))
	assert.Equal(t, len(s.CeilingsFor("nccl.all_gather")), 1)
	assert.Equal(t, len(s.CeilingsFor("rccl.all_gather")), 0)
	assert.Equal(t, s.Ceilings[0].Line, 8)
	cases := []struct {
		name, from, to, want string
	}{
		{"variant policy", "other: warn", "other: ignore", `t.yaml: line 6: field gpu_variant.other: "ignore" is not fail or warn`},
		{"variant without names", `  names: ["NVIDIA A100-SXM4-80GB"]` + "\n", "", "line 4: field gpu_variant.names: missing"},
		{"variant without family", "gpu: A100\n", "", "line 3: field gpu_variant: needs gpu"},
		{"typo in a variant", "  other: warn", "  othr: warn", `line 6: field "othr" is not known here`},
		{"ceiling without a unit", "    unit: GB/s\n    value: 650", "    unit: ''\n    value: 650", `line 9: field ceilings.unit: missing`},
		{"ceiling of nothing", "value: 650", "value: 0", "line 10: field ceilings.value: 0: want the limit, more than 0"},
		{"ceiling without its source", "    source: NVIDIA A100 datasheet\n", "", "line 8: field ceilings.source: missing"},
		{"ceiling without its link", "    link: NVLink 3\n", "", "line 8: field ceilings.link: missing"},
		{"ceiling on a bad test name", `tests: ["nccl.*"]`, `tests: ["nccl"]`, `line 12: field ceilings.tests: "nccl" is neither plugin.test nor plugin.*`},
		{"reference above the ceiling (bits for bytes)", "value: 230}", "value: 5200}", "line 26: field value: 5200 GB/s is above the SKU's ceiling for busbw (650 GB/s, NVLink 3, line 8): no healthy system measures it (the two differ by 8.0x"},
		{"peak above the gate", "    link: NVLink 3\n", "    link: NVLink 3\n    peak: 700\n    peak_link: x\n", "line 12: field ceilings.peak: 700: want the datasheet figure, more than 0 and at most value (650 GB/s)"},
		{"peak without what it is of", "    link: NVLink 3\n", "    link: NVLink 3\n    peak: 300\n", "line 12: field ceilings.peak_link: missing"},
		{"NIC without what it is", "    link: NVLink 3\n", "    link: NVLink 3\n    nic_gbps: 200\n", "line 12: field ceilings.nic_link: missing"},
		{"NIC rate below zero", "    link: NVLink 3\n", "    link: NVLink 3\n    nic_gbps: -200\n    nic_link: HDR\n", "line 12: field ceilings.nic_gbps: -200: want the line rate of a GPU's NIC in Gb/s"},
		{"NIC on a per-GPU ceiling", "    link: NVLink 3\n", "    link: NVLink 3\n    per_gpu: true\n    nic_gbps: 200\n    nic_link: HDR\n", "line 13: field ceilings.nic_gbps: a per_gpu ceiling crosses no NIC"},
		{"a floor that judges nothing", "    link: NVLink 3\n", "    link: NVLink 3\n    per_gpu: true\n    floor: 0.0001\n", "line 13: field ceilings.floor: 0.0001: want the least fraction of the datasheet figure a healthy GPU reaches, from 0.05 to less than 1 (0.5), or leave it out"},
		{"a floor of 0 written", "    link: NVLink 3\n", "    link: NVLink 3\n    per_gpu: true\n    floor: 0\n", "line 13: field ceilings.floor: 0: want the least fraction"},
		{"a floor of the whole figure", "    link: NVLink 3\n", "    link: NVLink 3\n    per_gpu: true\n    floor: 1\n", "line 13: field ceilings.floor: 1: want the least fraction"},
		{"a floor on a link", "    link: NVLink 3\n", "    link: NVLink 3\n    floor: 0.5\n", "line 12: field ceilings.floor: a floor needs per_gpu: true"},
		{"peak domain below zero", "    link: NVLink 3\n", "    link: NVLink 3\n    peak_domain: -1\n", "line 12: field ceilings.peak_domain: -1"},
		{"label filter without a value", "    link: NVLink 3\n", "    link: NVLink 3\n    labels: {dtype: \"\"}\n", `line 12: field ceilings.labels: "dtype": "": a label filter needs a name and a value`},
		{"two ceilings apart only by labels are two", "suites:", "  - {metric: busbw, unit: GB/s, value: 900, link: x, source: y, tests: [\"nccl.*\"], labels: {placement: in-place}}\n  - {metric: busbw, unit: GB/s, value: 900, link: x, source: y, tests: [\"nccl.*\"], labels: {placement: in-place}}\nsuites:", "line 15: field ceilings: busbw in GB/s for the same tests and labels is also limited at line 14"},
		{"two ceilings for one metric", "suites:", "  - {metric: busbw, unit: GB/s, value: 900, link: x, source: y, tests: [\"nccl.*\"]}\nsuites:", "line 14: field ceilings: busbw in GB/s for the same tests and labels is also limited at line 8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Assert(t, strings.Contains(hw, c.from), "case does not apply: %q", c.from)
			_, err := Parse([]byte(strings.Replace(hw, c.from, c.to, 1)), "t.yaml")
			assert.ErrorContains(t, err, c.want)
		})
	}
	// A one-GPU reference crosses no link: a link ceiling does not limit
	// it, a per-GPU one (a GPU's own HBM, matmul peak) does.
	oneGPU := strings.NewReplacer("scope: {nodes: 1, gpus_per_node: 2}", "scope: {nodes: 1, gpus_per_node: 1}", "value: 230}", "value: 5200}")
	_, err = Parse([]byte(oneGPU.Replace(hw)), "t.yaml")
	assert.NilError(t, err)
	_, err = Parse([]byte(oneGPU.Replace(strings.Replace(hw, "    link: NVLink 3\n", "    link: NVLink 3\n    per_gpu: true\n", 1))), "t.yaml")
	assert.ErrorContains(t, err, "line 27: field value: 5200 GB/s is above the SKU's ceiling for busbw (650 GB/s, NVLink 3, line 8)")
}

// A suite's min_gpus skips a test below that GPU count, naming it; skip:
// wins; a negative count is a problem of its line.
func TestSuiteMinGPUs(t *testing.T) {
	cat, err := Load(baselines.FS, "baselines")
	assert.NilError(t, err)
	node := cat.SKUs["h200"].Suites["node"]
	reasons := map[string]string{}
	for _, st := range node.Tests {
		reasons[st.Test] = st.SkipReason(plan.Scope{Nodes: 1, GPUsPerNode: 1})
		assert.Equal(t, st.SkipReason(plan.Scope{Nodes: 1, GPUsPerNode: 2}), "", st.Test)
	}
	assert.Equal(t, reasons["gemm.matmul"], "")
	assert.Equal(t, reasons["hostlink.p2p"], "needs at least 2 GPUs, scope 1x1 has 1")
	assert.Equal(t, reasons["nccl.all_reduce"], "needs at least 2 GPUs, scope 1x1 has 1")
	both := SuiteTest{Test: "x.y", Skip: "no plugin yet", MinGPUs: 2}
	assert.Equal(t, both.SkipReason(plan.Scope{Nodes: 1, GPUsPerNode: 1}), "no plugin yet")
	_, err = Parse([]byte("sku: t\nsuites:\n  s:\n    tests:\n      - test: a.b\n        min_gpus: -1\n"), "t.yaml")
	assert.ErrorContains(t, err, "t.yaml: line 5: field min_gpus: -1: want a GPU count")
}

// site_params are read with the line of their key; a name that is no
// parameter name, or one listed twice, is a problem of that line (file,
// line, field). A name the plugin does not take is skucheck's to find.
func TestSuiteSiteParams(t *testing.T) {
	const head = "sku: t\nsuites:\n  s:\n    tests:\n      - test: ibperf.write_bw\n        params: {pairs: \"ionic_0\", iters: \"5000\"}\n"
	for _, c := range []struct {
		name, line string
		want       []string // problems; nil: parses
	}{
		{"one", "site_params: [pairs]", nil},
		{"a variable", "site_params: [pairs, env.NCCL_IB_HCA]", nil},
		{"block list", "site_params:\n          - pairs\n          - gpus", nil},
		{"empty name", `site_params: [pairs, ""]`, []string{`t.yaml: line 7: field site_params: "" is not a parameter name (pairs, gpus)`}},
		{"scoped as --param", "site_params: [\"ibperf.write_bw:pairs\"]", []string{`t.yaml: line 7: field site_params: "ibperf.write_bw:pairs" is not a parameter name (pairs, gpus)`}},
		{"key=value", "site_params: [pairs=ionic_7:ionic_1]", []string{`t.yaml: line 7: field site_params: "pairs=ionic_7:ionic_1" is not a parameter name (pairs, gpus)`}},
		{"twice", "site_params: [pairs, iters, pairs]", []string{"t.yaml: line 7: field site_params: pairs listed twice"}},
		{"a string, not a list", "site_params: pairs", []string{"t.yaml: line 7: cannot unmarshal !!str `pairs` into []string"}},
		{"misspelt key", "site_param: [pairs]", []string{`t.yaml: line 7: field "site_param" is not known here`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(head+"        "+c.line+"\n"), "t.yaml")
			if c.want == nil {
				assert.NilError(t, err)
				st := s.Suites["s"].Tests[0]
				assert.Assert(t, st.IsSiteParam("pairs") && !st.IsSiteParam("iters"), "%+v", st)
				assert.Equal(t, st.SiteParamsLine, 7)
				return
			}
			var p *Problems
			assert.Assert(t, errors.As(err, &p), "%v", err)
			var got []string
			for _, pr := range p.List {
				got = append(got, pr.Error())
			}
			assert.Equal(t, len(got), len(c.want), "%v", err)
			for i, w := range c.want {
				assert.Assert(t, strings.HasPrefix(got[i], w), "want %q, got %q", w, got[i])
			}
		})
	}
}
