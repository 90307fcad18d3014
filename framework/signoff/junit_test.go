package signoff

import (
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// The junit.xml of a real failing H200 run (NCCL_P2P_DISABLE=1): its
// counts and outcomes are read whatever the layout; a failure count
// changed is a difference, a layout changed is none.
func TestJUnitVerdicts(t *testing.T) {
	data, err := os.ReadFile("../../testdata/recordings/h200x2-2026-11-30-final/p2poff.junit.xml")
	assert.NilError(t, err)
	got, err := junitVerdicts(data)
	assert.NilError(t, err)
	// That version's layout: one testsuite, a testcase per test.
	assert.Equal(t, got["testsuites"], "tests 2, failures 2, errors 0, skipped 0")
	assert.Equal(t, got["testsuite gpuaccept.h200.singlenode testcase nccl.all_reduce"], "failure")
	cases := []struct {
		name, from, to string
		diffs          int
	}{
		{"layout", "\t", "  ", 0},
		{"failure count", `failures="`, `failures="0`, 1},
		{"outcome", "<failure ", "<system-out ", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forged := strings.Replace(string(data), c.from, c.to, 1)
			assert.Assert(t, forged != string(data))
			d := junitDiffs([]byte(forged), data)
			assert.Equal(t, len(d) > 0, c.diffs > 0, "%v", d)
		})
	}
	d := junitDiffs([]byte("<html></html>"), data)
	assert.Assert(t, len(d) == 1 && strings.Contains(d[0], "root element <html>"), "%v", d)
}

func TestHeadlineOf(t *testing.T) {
	for in, want := range map[string]string{
		"**gpuaccept FAIL: SKU h200, suite singlenode, scope 1x2, launcher replay: 5 pass, 1 fail (107ms)**":       "FAIL: SKU h200, suite singlenode, scope 1x2, launcher replay: 5 pass, 1 fail",
		"└──┘\nPASS: SKU h200, suite node (--test nccl.all_reduce only), scope 1x1, launcher local: 1 pass (3s)\n": "PASS: SKU h200, suite node (--test nccl.all_reduce only), scope 1x1, launcher local: 1 pass",
		"<h1>gpuaccept</h1>": "",
	} {
		assert.Equal(t, headlineOf([]byte(in)), want)
	}
}

func FuzzJUnitVerdicts(f *testing.F) {
	data, err := os.ReadFile("../../testdata/recordings/h200x2-2026-11-30-final/p2poff.junit.xml")
	if err == nil {
		f.Add(data)
	}
	f.Add([]byte(`<testsuites><testsuite name="a"><testcase name="b"><failure/></testcase></testsuite></testsuites>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = junitVerdicts(data)
		_ = junitDiffs(data, data)
		_ = headlineOf(data)
	})
}
