package proc

import (
	"os/exec"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		argv []string
		want int
	}{
		{[]string{"true"}, 0},
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{[]string{"/nonexistent/program"}, -1},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.argv, " "), func(t *testing.T) {
			assert.Equal(t, ExitCode(exec.Command(tc.argv[0], tc.argv[1:]...).Run()), tc.want)
		})
	}
}
