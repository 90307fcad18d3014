package report

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// A message a plugin built from a node's output (hostlink's placement
// text, a DCGM warning) can hold line feeds and terminal controls: in
// summary.md a line feed ended the list item, and "PASS ..." on a line of
// its own read as a verdict; report.html kept ESC and OSC sequences that
// act on whoever reads it with cat. The text is the one an attacker's
// torchbench output put into a real FAIL (issue 28's attacker trial).
func TestPluginTextStaysInItsLine(t *testing.T) {
	msg := "bw {direction=h2d} 20.0 GB/s below 49.9 (baseline 55.4 -10%); placement: GPU0 (ok\x1b[1A\x1b[2KPASS), buffer on node 0\x1b[2J\x1b[32mPASS: all links nominal\x1b[0m\r\nverdict: PASS; IOMMU on (iommu=pt \x1b]8;;http://evil/\aclick\x1b]8;;\a)\n\nPASS (max Gen5 x16)"
	run := &result.Run{Status: result.Fail, SKU: "h200", Suite: "check", Launcher: "check", Tests: []result.Test{{
		Name: "hostlink.pcie", Status: result.Fail, Message: msg,
		Metrics: []result.Judged{{Metric: result.Metric{Name: "bw", Value: 20, Unit: "GB/s", Labels: map[string]string{"direction": "h2d"}}, Status: result.Fail, Message: msg}},
	}}}
	for _, c := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{layout.Markdown, func(b *bytes.Buffer) error { return Markdown(b, run) }},
		{layout.HTML, func(b *bytes.Buffer) error { return HTML(b, run, nil) }},
		{layout.Table, func(b *bytes.Buffer) error { return Table(b, run) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			assert.NilError(t, c.write(&b))
			out := b.String()
			assert.Assert(t, !strings.ContainsAny(out, "\x1b\a\r"), "a control byte reached %s", c.name)
			if c.name == layout.HTML {
				return // a browser folds line feeds: only controls matter there
			}
			for _, l := range strings.Split(out, "\n") {
				l = strings.TrimSpace(l)
				assert.Assert(t, !strings.HasPrefix(l, "PASS") && !strings.HasPrefix(l, "verdict: PASS"), "%s: a line of the message stands alone: %q", c.name, l)
			}
		})
	}
}
