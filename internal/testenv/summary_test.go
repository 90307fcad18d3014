package testenv

import (
	"os/exec"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// scripts/test.sh reads go test -json back through gotest-summary.awk:
// the plain output (package lines, failed tests' output) and a count of
// the skipped tests with what they need to run (issue 22: 46 tests
// skipped without a word). Inputs: real go test -json outputs (testdata/README.md).
func TestGoTestSummary(t *testing.T) {
	awk, err := exec.LookPath("awk")
	if err != nil {
		t.Skip("no awk on this host; scripts/test.sh needs one")
	}
	for _, c := range []struct {
		file string
		want []string
		not  []string
	}{
		{"gotest-skips.json", []string{
			"ok  \tgithub.com/gpuaccept/gpuaccept/launchers/slurm\t",
			"ok  \tgithub.com/gpuaccept/gpuaccept/framework/manifest\t",
			"skipped: 2 tests; they run:\n     2  with scripts/testenv.sh up slurm\n",
		}, []string{"=== RUN", "--- PASS", "--- SKIP", "SLURM_CONF is unset"}},
		{"gotest-required.json", []string{
			"hosts_test.go:58: integration service missing (GPUACCEPT_INTEGRATION=required): SLURM_CONF is unset",
			"--- FAIL: TestClusterRanksSeeHosts",
			"FAIL\tgithub.com/gpuaccept/gpuaccept/launchers/slurm\t",
			"skipped: none\n",
		}, []string{"=== RUN"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			out, err := exec.Command(awk, "-f", "../../scripts/gotest-summary.awk", "testdata/"+c.file).CombinedOutput()
			assert.NilError(t, err, string(out))
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(string(out), w), "lacks %q:\n%s", w, out)
			}
			for _, w := range c.not {
				assert.Assert(t, !strings.Contains(string(out), w), "holds %q:\n%s", w, out)
			}
		})
	}
}
