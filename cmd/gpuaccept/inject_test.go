package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"gotest.tools/v3/assert"
)

// controlled says where s holds a rune a terminal acts on or hides
// (ESC, CR, BS, C1, the bidi and other format characters), written out
// independently of the code under test.
func controlled(s string) string {
	for i, r := range s {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029') {
			return strings.ToValidUTF8(s[max(0, i-40):min(len(s), i+40)], "?")
		}
	}
	return ""
}

// TestInjectFileNameInReports: a log's file name becomes part of its
// test's name; one crafted with a carriage return, an erase-line CSI, an
// OSC title and a bidi override must reach the terminal, table.txt and
// summary.md escaped (it erased the FAIL row and printed "ALL PASS"), and
// a Markdown link in it must not become a link in summary.md.
func TestInjectFileNameInReports(t *testing.T) {
	data := readFile(t, degradedLog(t))
	in := t.TempDir()
	name := "x\r\x1b[2K\u202eALL PASS\x1b]0;title\x07[see](javascript:alert(1)).log"
	log := filepath.Join(in, name)
	assert.NilError(t, os.WriteFile(log, []byte(data), 0o644))
	// A second log: the runs of a check are then named by their files.
	other := filepath.Join(in, "other.log")
	assert.NilError(t, os.WriteFile(other, []byte(data), 0o644))
	out := filepath.Join(t.TempDir(), "check")
	code, stdout, stderr := cli(t, "check", "--out", out, "--sku", "h200", "--test", "nccl.all_reduce", "--nodes", "1", "--gpus-per-node", "2", log, other)
	assert.Equal(t, code, 1, stdout+stderr)
	code, mdout, _ := cli(t, "report", "--format", "markdown", out)
	assert.Equal(t, code, 1)
	code, jsout, _ := cli(t, "report", "--format", "json", out)
	assert.Equal(t, code, 1)
	for what, text := range map[string]string{
		"check's stdout":    stdout,
		"report's markdown": mdout,
		"report's json":     jsout,
		layout.Table:        readFile(t, filepath.Join(out, layout.Table)),
		layout.Markdown:     readFile(t, filepath.Join(out, layout.Markdown)),
	} {
		assert.Equal(t, controlled(text), "", "%s holds a control or format character", what)
		assert.Assert(t, strings.Contains(text, "FAIL") || strings.Contains(text, "fail"), "%s lost the FAIL verdict:\n%s", what, text)
	}
	assert.Equal(t, controlled(stderr), "", "check's stderr holds a control or format character")
	assert.Assert(t, strings.Contains(stdout, `x\r\x1b[2K\u202eALL PASS\x1b]0;title\a`), "the name is shown escaped:\n%s", stdout)
	md := readFile(t, filepath.Join(out, layout.Markdown))
	// A link is "[text](url)" with neither bracket escaped.
	link := regexp.MustCompile(`(^|[^\\])\[[^\]]*[^\\]\]\(`)
	assert.Assert(t, !link.MatchString(md), "summary.md holds a link: %q", link.FindString(md))
	code, vout, verrs := cli(t, "verify", out)
	assert.Equal(t, code, 0, vout+verrs)
}
