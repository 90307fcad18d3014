package ibperf

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
)

// A real perftest output with every line labelled as launchers and log
// collectors do (mpirun --tag-output, srun --label, kubectl logs --prefix
// --timestamps, stacked), with LF and CRLF line ends, reads as the
// unlabelled one.
func TestParseTextLauncherLabels(t *testing.T) {
	path := seed + "ibperf.write_bw_gdr/client.0.log"
	data, err := os.ReadFile(path)
	assert.NilError(t, err)
	want := parseFile(t, path)
	assert.Assert(t, len(want.Rows) > 0)
	for _, label := range []string{"[1,0]<stdout>:", "0: ", "2024-05-01T12:00:00.123456789Z ", "[pod/ib-client-0/perftest] 2024-05-01T12:00:00Z "} {
		for _, eol := range []string{"\n", "\r\n"} {
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			for i := range lines {
				lines[i] = label + lines[i]
			}
			got, err := ParseText(strings.NewReader(strings.Join(lines, eol)+eol), "client.0.log")
			assert.NilError(t, err)
			assert.DeepEqual(t, got, want, cmp.AllowUnexported(Output{}))
		}
	}
}
