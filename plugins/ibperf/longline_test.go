package ibperf

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// An output whose line breaks were lost (or a hostile one) is read line by
// line through textdiag.ReadLine, which keeps memory bounded (its
// benchmark, BenchmarkReadLineUnbroken, shows the figure): the long line
// is cut, and the lines after it keep their numbers.
func TestLongLineKeepsLineNumbers(t *testing.T) {
	in := strings.Repeat("x", 1<<20) + "\nCouldn't connect to 10.0.0.1:18515\n"
	o, err := ParseText(strings.NewReader(in), "long.log")
	assert.NilError(t, err)
	assert.Assert(t, len(o.Errors) == 1 && o.Errors[0].Line == 2, "%+v", o.Errors)
}
