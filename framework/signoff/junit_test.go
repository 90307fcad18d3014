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

// A junit.xml an earlier gpuaccept made of a not-signed-off run (the H100's
// issue 28 node run) has no "sign-off" testcase; this version's rendering
// ends with one. Its verdicts re-derive all the same (the suite's counts
// taken off the whole's), while a "sign-off" case that is there is held
// to the re-derived one: turned to a pass, or counted otherwise, it is a
// difference.
func TestJUnitVerdictsSignOffSuite(t *testing.T) {
	data, err := os.ReadFile("../../testdata/recordings/h100x1-2026-12-07/issue28/node-2/junit.xml")
	assert.NilError(t, err)
	old := string(data)
	const suite = `	<testsuite name="sign-off" tests="1" failures="1" errors="0" id="6" hostname="vm" package="gpuaccept.h100-sxm.node" time="0.000">
		<testcase name="sign-off" classname="gpuaccept.h100-sxm.node">
			<failure message="not signed off: measured, not judged: gemm.matmul, hbm.bandwidth, hostlink.pcie" type="not-signed-off"></failure>
		</testcase>
	</testsuite>
</testsuites>`
	now := strings.Replace(strings.Replace(old, "</testsuites>", suite, 1), `time="23.150" tests="19">`, `time="23.150" tests="20" failures="1">`, 1)
	assert.Assert(t, now != old)
	cases := []struct {
		name  string
		have  string
		diffs int
	}{
		{"earlier version, no sign-off case", old, 0},
		{"this version", now, 0},
		{"sign-off case turned to a pass", strings.Replace(now, `<failure message="not signed off`, `<system-out message="not signed off`, 1), 1},
		{"whole's failures taken off", strings.Replace(now, `tests="20" failures="1"`, `tests="20"`, 1), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := junitDiffs([]byte(c.have), []byte(now))
			assert.Equal(t, len(d), c.diffs, "%v", d)
		})
	}
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
