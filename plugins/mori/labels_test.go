package mori

import (
	"os"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// A real Mori-EP output with every line labelled as launchers and log
// collectors do (torchrun, srun --label, kubectl logs --prefix
// --timestamps, stacked), with LF and CRLF line ends, reads as the
// unlabelled one.
func TestParseTextLauncherLabels(t *testing.T) {
	data, err := os.ReadFile(intraLog)
	assert.NilError(t, err)
	want, err := ParseText(strings.NewReader(string(data)), "ep_intranode.log")
	assert.NilError(t, err)
	assert.Assert(t, len(want.Configs) > 0)
	for _, label := range []string{"[default0]:", "0: ", "2024-05-01T12:00:00.123456789Z ", "[pod/mori-0/ep] 2024-05-01T12:00:00Z [1,0]<stdout>:"} {
		for _, eol := range []string{"\n", "\r\n"} {
			lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
			for i := range lines {
				lines[i] = label + lines[i]
			}
			got, err := ParseText(strings.NewReader(strings.Join(lines, eol)+eol), "ep_intranode.log")
			assert.NilError(t, err)
			assert.DeepEqual(t, got, want)
		}
	}
}
