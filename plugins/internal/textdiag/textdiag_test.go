package textdiag

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestList(t *testing.T) {
	l := List{Max: 2}
	for i := 1; i <= 5; i++ {
		l.Add(i, "bad row")
	}
	assert.DeepEqual(t, l.Done(), []Diag{{1, "bad row"}, {2, "bad row"}, {0, "3 more not kept"}})
	var empty List
	assert.Assert(t, empty.Done() == nil)
}

// TextMax clips every text added; What names the dropped ones.
func TestListClipsAndNames(t *testing.T) {
	l := List{Max: 1, TextMax: 4, What: "warnings"}
	l.Add(7, "  row not understood ")
	l.Add(8, "x")
	l.Add(9, "y")
	assert.DeepEqual(t, l.Done(), []Diag{{7, "row ..."}, {0, "2 more warnings not kept"}})
}

func TestClip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  ok  ", "ok"},
		{"  short  ", "sho..."},
		{"abcdef", "abc..."},
		{"ab\u00e9def", "ab..."}, // é spans bytes 2-3: cut before it
		{"a\xffb", "a?b"},        // invalid UTF-8 replaced
	}
	for _, tc := range tests {
		assert.Equal(t, Clip(tc.in, 3), tc.want, "%q", tc.in)
	}
}

// Lines longer than the reader's buffer and than max are cut at max and
// the rest dropped; the next line starts where the long one ended.
func TestReadLine(t *testing.T) {
	in := "short\r\n" + strings.Repeat("x", 100) + "\n\nlast"
	br := bufio.NewReaderSize(strings.NewReader(in), 16)
	type got struct {
		line string
		read bool
		err  error
	}
	var all []got
	for {
		l, read, err := ReadLine(br, 10)
		all = append(all, got{l, read, err})
		if err != nil {
			break
		}
	}
	want := []got{{"short", true, nil}, {strings.Repeat("x", 10), true, nil}, {"", true, nil}, {"last", true, io.EOF}}
	assert.Equal(t, len(all), len(want))
	for i := range want {
		assert.Equal(t, all[i], want[i], "line %d", i+1)
	}
	l, read, err := ReadLine(br, 10)
	assert.Equal(t, got{l, read, err}, got{"", false, io.EOF}, "after the end")
}

// unbroken reads as n bytes of 'x' without holding them.
type unbroken struct{ n int }

func (r *unbroken) Read(p []byte) (int, error) {
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

// Memory for an output whose line breaks were lost: B/op stays near the
// cut (max) and the reader's buffer, not the 64 MiB line (ReadString held
// all of it twice before ibperf and mori read through ReadLine).
//
//	go test -run '^$' -bench ReadLineUnbroken -benchmem ./plugins/internal/textdiag/
func BenchmarkReadLineUnbroken(b *testing.B) {
	const long = 64 << 20
	b.ReportAllocs()
	b.SetBytes(long)
	for b.Loop() {
		br := bufio.NewReader(&unbroken{n: long})
		line, _, err := ReadLine(br, 1<<16)
		if len(line) != 1<<16 || err != io.EOF {
			b.Fatalf("got %d bytes, %v", len(line), err)
		}
	}
}
