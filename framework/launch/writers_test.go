package launch

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// The server's readiness line can arrive in pieces, after a line longer
// than the scanner's default buffer; it is found once and everything is
// passed on unchanged.
func TestMarkerWriter(t *testing.T) {
	const marker = "Waiting for client to connect"
	tests := []struct {
		name   string
		writes []string
		found  int
	}{
		{"whole line", []string{"hello\n", " " + marker + " ...\n"}, 1},
		{"split across writes", []string{"x\n Waiting for cli", "ent to connect ...\n"}, 1},
		{"after a long line", []string{strings.Repeat("a", 100<<10) + "\n", marker + "\n"}, 1},
		{"split across three writes", []string{"x\nWait", "ing for client to con", "nect ...\n"}, 1},
		{"pieces on two lines", []string{"Waiting for cli\n", "ent to connect\n"}, 0},
		{"in one write after a line over 128 KiB", []string{strings.Repeat("a", 200<<10) + "\n" + marker + "\n"}, 1},
		{"at the end of a line over 64 KiB", []string{strings.Repeat("a", 70<<10), " " + marker + "\n"}, 1},
		{"split after a line over 64 KiB", []string{strings.Repeat("a", 70<<10) + " Waiting for", " client to connect\n"}, 1},
		{"twice, found once", []string{marker + "\n" + marker + "\n"}, 1},
		{"absent", []string{"Couldn't listen to port\n"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			n := 0
			m := &MarkerWriter{W: &out, Marker: []byte(marker), Found: func() { n++ }}
			for _, w := range tc.writes {
				_, err := m.Write([]byte(w))
				assert.NilError(t, err)
			}
			assert.Equal(t, n, tc.found)
			assert.Equal(t, out.String(), strings.Join(tc.writes, ""))
		})
	}
}
