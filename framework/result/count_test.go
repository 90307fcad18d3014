package result

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		many []string
		want string
	}{
		{0, "test", nil, "0 tests"},
		{1, "test", nil, "1 test"},
		{2, "test", nil, "2 tests"},
		{1, "entry", nil, "1 entry"},
		{5, "entry", nil, "5 entries"},
		{2, "day", nil, "2 days"},
		{1, "series", []string{"series"}, "1 series"},
		{3, "series", []string{"series"}, "3 series"},
	} {
		assert.Equal(t, Count(c.n, c.noun, c.many...), c.want)
	}
}
