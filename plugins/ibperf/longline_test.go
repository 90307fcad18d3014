package ibperf

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// xs reads as n bytes of 'x' without holding them.
type xs struct{ n int }

func (r *xs) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	r.n -= k
	return k, nil
}

// An output whose line breaks were lost (or a hostile one) is read in
// bounded memory: the long line is cut, and the lines after it are still
// read with their numbers.
func TestLongLineBoundedMemory(t *testing.T) {
	const long = 64 << 20
	in := io.MultiReader(&xs{n: long}, strings.NewReader("\nCouldn't connect to 10.0.0.1:18515\n"))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	o, err := ParseText(in, "long.log")
	runtime.ReadMemStats(&after)
	assert.NilError(t, err)
	assert.Assert(t, len(o.Errors) == 1 && o.Errors[0].Line == 2, "%+v", o.Errors)
	allocated := after.TotalAlloc - before.TotalAlloc
	assert.Assert(t, allocated < long/4, "parsing a %d-byte line allocated %d bytes", long, allocated)
}
