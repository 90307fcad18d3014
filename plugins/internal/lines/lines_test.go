package lines

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// Lines come numbered, without their ends, a long one cut at the bound
// and said to be; a last line without an end is a line.
func TestEach(t *testing.T) {
	for _, c := range []struct {
		name, in string
		max      int
		want     []string
	}{
		{"plain", "a\nbb\r\nccc\n", 8, []string{"1 a", "2 bb", "3 ccc"}},
		{"no end", "a\nbb", 8, []string{"1 a", "2 bb"}},
		{"long cut", "abcdefghij\nk\n", 4, []string{"1 abcd cut", "2 k"}},
		{"exactly max", "abcd\n", 4, []string{"1 abcd"}},
		{"longer than the reader's buffer", strings.Repeat("x", 200<<10) + "\ny\n", 100 << 10, []string{"1 " + strings.Repeat("x", 100<<10) + " cut", "2 y"}},
		{"empty", "", 8, nil},
		{"blank lines", "\n\n", 8, []string{"1 ", "2 "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			err := Each(strings.NewReader(c.in), c.max, func(line []byte, no int, cut bool) {
				entry := string(rune('0'+no)) + " " + string(line)
				if cut {
					entry += " cut"
				}
				got = append(got, entry)
			})
			assert.NilError(t, err)
			assert.DeepEqual(t, got, c.want)
		})
	}
}

// FuzzEach: any input is read without a panic, and no line given is
// longer than the bound.
func FuzzEach(f *testing.F) {
	f.Add([]byte("a\r\nb\n"), 3)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		_ = Each(bytes.NewReader(data), max, func(line []byte, _ int, _ bool) {
			if len(line) > max {
				t.Fatalf("line of %d bytes, bound %d", len(line), max)
			}
		})
	})
}
