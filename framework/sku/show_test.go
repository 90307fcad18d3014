package sku

import (
	"testing"

	"gotest.tools/v3/assert"
)

// Sources wrap at spaces to a terminal's width; a word longer than a line
// (a path) is not broken.
func TestWrap(t *testing.T) {
	cases := []struct {
		name, text, want string
		width            int
	}{
		{"fits", "a b c", "  a b c\n", 80},
		{"breaks at a space", "aaa bbb ccc", "  aaa\n    bbb\n    ccc\n", 8},
		{"a long word stays whole", "x /a/very/long/path y", "  x\n    /a/very/long/path\n    y\n", 8},
		{"empty", "", "  \n", 80},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, wrap(c.text, c.width, "  ", "    "), c.want)
		})
	}
}
