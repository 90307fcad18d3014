package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// The built-in catalog (issue 30): `list skus` shows every data-centre SKU
// sold today and every seed SKU, each with a node and a multinode suite,
// and `list suites` shows health.node in each SKU's node suite, so
// `--suite node` runs node health first on any of them.
func TestListSkusCatalog(t *testing.T) {
	want := []string{
		"a100-40gb", "a100-80gb", "h100", "h100-nvl", "h100-pcie", "h200", "h200-nvl",
		"b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi350x", "mi355x",
		"b200-a4", "gb200-a4x", "a100-ndmv4", "volcengine-hpcpni",
	}
	var out, errb strings.Builder
	code, err := cmdList([]string{"skus"}, &out, &errb)
	assert.NilError(t, err)
	assert.Equal(t, code, exitOK)
	skus := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(l)
		i := strings.Index(l, "suites: ")
		assert.Assert(t, len(f) > 0 && i >= 0, "line without suites: %q", l)
		skus[f[0]] = l[i+len("suites: "):]
	}
	out.Reset()
	code, err = cmdList([]string{"suites"}, &out, &errb)
	assert.NilError(t, err)
	assert.Equal(t, code, exitOK)
	suiteTests := map[string]string{} // "sku suite" -> its tests
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Fields(l)
		assert.Assert(t, len(f) >= 3, "list suites line %q", l)
		suiteTests[f[0]+" "+f[1]] = " " + strings.Join(f[2:], " ") + " "
	}
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			suites, ok := skus[name]
			assert.Assert(t, ok, "list skus does not show %s:\n%s", name, out.String())
			for _, s := range []string{"node", "multinode"} {
				assert.Assert(t, strings.Contains(", "+suites+",", ", "+s+","), "%s has no %s suite (suites: %s)", name, s, suites)
			}
			node := suiteTests[name+" node"]
			assert.Assert(t, strings.Contains(node, " health.node "), "%s node suite has no health.node: %s", name, node)
			for _, tst := range []string{"gemm.matmul", "hbm.bandwidth", "hostlink.pcie", "hostlink.p2p"} {
				assert.Assert(t, strings.Contains(node, " "+tst+" "), "%s node suite has no %s: %s", name, tst, node)
			}
			coll := " nccl.all_reduce "
			if strings.HasPrefix(name, "mi") {
				coll = " rccl.all_reduce "
			}
			assert.Assert(t, strings.Contains(node, coll), "%s node suite has no%s: %s", name, coll, node)
		})
	}
}

// siteBaselines writes a --baselines folder holding an h100.yaml that
// overrides the built-in one (its description changed) and a SKU no
// gpuaccept carries (site-h100, a renamed copy).
func siteBaselines(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	h100 := readFile(t, "../../baselines/h100.yaml")
	assert.Assert(t, strings.Contains(h100, "\nsku: h100\n"))
	over := regexp.MustCompile(`(?m)^description: .*$`).ReplaceAllString(h100, "description: the site's own H100 bands")
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "h100.yaml"), []byte(over), 0o644))
	extra := strings.Replace(h100, "\nsku: h100\n", "\nsku: site-h100\n", 1)
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "site-h100.yaml"), []byte(extra), 0o644))
	return dir
}

// --baselines DIR adds DIR's SKUs to the built-in ones, a file of a
// built-in SKU's name taking its place; list skus says where each comes
// from, in the table and in JSON, and the override is said once on stderr.
func TestListSKUsSource(t *testing.T) {
	dir := siteBaselines(t)
	type sku struct{ Name, Source, Description string }
	cases := []struct {
		name       string
		args       []string
		want       map[string]sku // among the SKUs listed
		wantStderr string
	}{
		{"built-in only", nil, map[string]sku{
			"h100":   {"h100", "built-in", ""},
			"mi355x": {"mi355x", "built-in", ""},
		}, ""},
		{"site folder", []string{"--baselines", dir}, map[string]sku{
			"h100":      {"h100", filepath.Join(dir, "h100.yaml"), "the site's own H100 bands"},
			"site-h100": {"site-h100", filepath.Join(dir, "site-h100.yaml"), ""},
			"mi355x":    {"mi355x", "built-in", ""},
		}, "note: SKU h100 from " + filepath.Join(dir, "h100.yaml") + " overrides the built-in one\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := cli(t, append([]string{"list", "skus", "--format", "json"}, c.args...)...)
			assert.Equal(t, code, 0, errs)
			assert.Equal(t, errs, c.wantStderr)
			var got []map[string]any
			assert.NilError(t, json.Unmarshal([]byte(out), &got), out)
			byName := map[string]map[string]any{}
			for _, s := range got {
				byName[s["name"].(string)] = s
			}
			for n, w := range c.want {
				s, ok := byName[n]
				assert.Assert(t, ok, "%s not listed: %s", n, out)
				assert.Equal(t, s["source"], w.Source, n)
				if w.Description != "" {
					assert.Equal(t, s["description"], w.Description, n)
				}
			}
			_, site := byName["site-h100"]
			assert.Equal(t, site, len(c.args) > 0, "site-h100 is listed only with --baselines")

			code, table, errs := cli(t, append([]string{"list", "skus"}, c.args...)...)
			assert.Equal(t, code, 0, errs)
			assert.Equal(t, strings.Count(errs, "overrides the built-in one"), strings.Count(c.wantStderr, "overrides the built-in one"))
			lines := strings.Split(strings.TrimSpace(table), "\n")
			assert.Equal(t, len(lines), len(got), "one table line per JSON object")
			for _, l := range lines {
				f := strings.Fields(l)
				assert.Equal(t, f[1], byName[f[0]]["source"], "the table's second column is the source: %q", l)
			}
		})
	}
}

// list --format json prints each list as a JSON array whose objects carry
// the fields README.md documents; the table stays the default; a format
// other than table or json is refused.
func TestListFormatJSON(t *testing.T) {
	cases := []struct {
		list  string
		extra []string
		// fields every object has
		fields []string
	}{
		{"skus", nil, []string{"name", "description", "source", "file", "gpus_per_node", "suites"}},
		{"suites", []string{"--sku", "h100"}, []string{"sku", "suite", "tests"}},
		{"tests", nil, []string{"test", "plugin", "plugin_version", "description"}},
		{"plugins", nil, []string{"name", "version", "tests"}},
		{"launchers", nil, []string{"name"}},
	}
	for _, c := range cases {
		t.Run(c.list, func(t *testing.T) {
			code, out, errs := cli(t, append([]string{"list", c.list, "--format", "json"}, c.extra...)...)
			assert.Equal(t, code, 0, errs)
			var got []map[string]json.RawMessage
			assert.NilError(t, json.Unmarshal([]byte(out), &got), out)
			assert.Assert(t, len(got) > 0, out)
			for _, o := range got {
				for _, f := range c.fields {
					_, ok := o[f]
					assert.Assert(t, ok, "no field %q in %v", f, o)
				}
			}
			code, table, errs := cli(t, append([]string{"list", c.list}, c.extra...)...)
			assert.Equal(t, code, 0, errs)
			assert.Assert(t, !strings.HasPrefix(table, "["), "table by default:\n%s", table)
		})
	}
	code, _, errs := cli(t, "list", "skus", "--format", "yaml")
	assert.Equal(t, code, 2)
	assert.Assert(t, strings.Contains(errs, `list: unknown --format "yaml" (known: table, json)`), errs)
}

// list suites --format json gives a suite's tests as the SKU file does:
// params, min_gpus, site_params.
func TestListSuitesJSON(t *testing.T) {
	code, out, errs := cli(t, "list", "suites", "--sku", "mi355x", "--format", "json")
	assert.Equal(t, code, 0, errs)
	var got []struct {
		SKU, Suite string
		Tests      []struct {
			Test       string            `json:"test"`
			Params     map[string]string `json:"params"`
			MinGPUs    int               `json:"min_gpus"`
			SiteParams []string          `json:"site_params"`
		}
	}
	assert.NilError(t, json.Unmarshal([]byte(out), &got), out)
	found := false
	for _, su := range got {
		assert.Equal(t, su.SKU, "mi355x")
		for _, st := range su.Tests {
			if su.Suite == "multinode" && st.Test == "ibperf.write_bw_gdr" {
				found = true
				assert.Equal(t, st.Params["pairs"], "ionic_1:ionic_1")
				assert.DeepEqual(t, st.SiteParams, []string{"pairs", "gpus"})
			}
		}
	}
	assert.Assert(t, found, out)
}
