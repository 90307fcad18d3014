package signoff

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// verify's OK line says a run that is not signed off as such, and why: a
// reader must not take "verify: OK" for a pass.
func TestRunVerdict(t *testing.T) {
	tests := func(st result.Status, names ...string) []result.Test {
		var out []result.Test
		for _, n := range names {
			out = append(out, result.Test{Name: n, Status: st})
		}
		return out
	}
	cases := []struct {
		name string
		run  result.Run
		want string
	}{
		{"pass", result.Run{Status: result.Pass, Tests: tests(result.Pass, "a")}, "pass"},
		{"warn", result.Run{Status: result.Warn, Tests: tests(result.Warn, "a")}, "warn"},
		{"failed tests", result.Run{Status: result.Fail, Tests: tests(result.Fail, "hbm.bandwidth")}, "fail: FAIL: failed: hbm.bandwidth"},
		{"more than 5", result.Run{Status: result.Fail, Tests: tests(result.Fail, "a", "b", "c", "d", "e", "f", "g")}, "fail: FAIL: failed: a, b, c, d, e, and 2 more"},
		{"bad nodes, each once", result.Run{Status: result.Fail, BadNodes: []result.BadNode{{Host: "n1"}, {Host: "n2"}, {Host: "n1"}}}, "fail: FAIL: failed health: n1, n2"},
		{"errored", result.Run{Status: result.Error, Tests: tests(result.Error, "nccl.all_reduce")}, "error: ERROR: errored: nccl.all_reduce"},
		{"nothing judged", result.Run{Status: result.Skip}, "skip: SKIP: nothing was judged"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, runVerdict(&c.run), c.want)
		})
	}
}

// verify's account and end: each line one line whatever a name holds; a
// secret in clear is a finding of its own; findings end in FAILED, none
// in the OK line.
func TestWriteVerdict(t *testing.T) {
	ok := func() *Result {
		return &Result{Manifest: &manifest.Manifest{Baseline: &manifest.Entry{Path: "baseline/h200.yaml"}, Files: []manifest.Entry{{Path: "results.json"}}},
			Run: &result.Run{Status: result.Pass, SKU: "h200", Tests: []result.Test{{Name: "t", Status: result.Pass}}}}
	}
	clean, dirty := t.TempDir(), t.TempDir()
	t.Setenv("HF_TOKEN", "hf_Zq8vT3kLm9Pw2Xy7Rb4Nc6Dj1Fg5Hs0")
	assert.NilError(t, os.WriteFile(filepath.Join(dirty, "a.log"), []byte("HF_TOKEN=hf_Zq8vT3kLm9Pw2Xy7Rb4Nc6Dj1Fg5Hs0\n"), 0o644))
	cases := []struct {
		name     string
		findings int
		dir      string
		want     string
		failed   bool
	}{
		{"ok", 0, clean, "verify: OK: 1 file matches the manifest; 1 test re-judged against baseline/h200.yaml gives the recorded verdicts (run pass)", false},
		{"findings", 2, clean, "verify: FAILED: 2 findings; this folder is not the sign-off its manifest describes\n", true},
		{"a secret in clear", 0, dirty, "MISMATCH a.log: line 1 holds a secret in clear (what gpuaccept writes is masked)\nverify: FAILED: 1 finding; this folder is not the sign-off its manifest describes\n", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ok()
			r.Findings = c.findings
			var b strings.Builder
			assert.Equal(t, r.WriteVerdict(&b, c.dir), c.failed)
			if c.failed {
				assert.Equal(t, b.String(), c.want)
				return
			}
			assert.Assert(t, strings.HasPrefix(b.String(), c.want), b.String())
		})
	}
	var b strings.Builder
	(&Result{Lines: []Line{{Kind: "MISMATCH", Text: "raw/x\nverify: OK"}, {Text: "plain"}}}).WriteLines(&b)
	assert.Equal(t, b.String(), "MISMATCH raw/x\\nverify: OK\nplain\n")
}

// verify's --digest, --allowed-signers and --identity: a digest parsed,
// the signers' file and identity together, an empty value refused.
func TestSigners(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	cases := []struct {
		name                      string
		digest, allowed, identity string
		empty                     []string
		want                      string
	}{
		{"none", "", "", "", nil, ""},
		{"digest", "sha256:" + hex, "", "", nil, ""},
		{"signers", "", "signers", "op@site", nil, ""},
		{"bad digest", "sha256:xyz", "", "", nil, "--digest: "},
		{"an empty value", "", "", "", []string{"digest"}, "--digest is empty: give a value or leave the flag out"},
		{"identity alone", "", "", "op@site", nil, "--allowed-signers and --identity go together"},
		{"signers alone", "", "signers", "", nil, "--allowed-signers and --identity go together"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var o Options
			err := o.Signers(c.digest, c.allowed, c.identity, c.empty)
			if c.want != "" {
				assert.ErrorContains(t, err, c.want)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, o.AllowedSigners, c.allowed)
			assert.Equal(t, o.Identity, c.identity)
			if c.digest != "" {
				assert.Equal(t, o.Digest, hex)
			}
		})
	}
}
