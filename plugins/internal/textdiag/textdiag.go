// Package textdiag holds what the plugins' text parsers share to keep their
// memory bounded whatever the output: reading it line by line with a cap on
// a line's length, a bounded list of line-tagged diagnostics, clipping of
// the output lines quoted in them, and the length of the labels launchers
// and log collectors put before each line (PrefixLen).
package textdiag

import (
	"bufio"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Diag is an error or warning found in an output.
type Diag struct {
	// Line is the 1-based input line; 0 for the whole output or a JSON file.
	Line int
	Text string
}

// In is d said of file: "file:line: text", or "file: text" for a
// diagnostic of the whole output (Line 0).
func (d Diag) In(file string) string {
	if d.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", file, d.Line, d.Text)
	}
	return file + ": " + d.Text
}

// List keeps the first Max diagnostics of an output and counts the rest, so
// a hostile or broken output of millions of bad lines cannot grow memory.
type List struct {
	// Max is the number of diagnostics kept; 0 keeps none.
	Max int
	// TextMax, when > 0, clips every text added to TextMax bytes (Clip).
	TextMax int
	// What names the kept things in the note on those not kept, e.g.
	// "warnings": "3 more warnings not kept"; empty: "3 more not kept".
	What    string
	list    []Diag
	dropped int
}

// Add records a diagnostic for line, or counts it when the list is full.
func (l *List) Add(line int, text string) {
	if len(l.list) >= l.Max {
		l.dropped++
		return
	}
	if l.TextMax > 0 {
		text = Clip(text, l.TextMax)
	}
	l.list = append(l.list, Diag{Line: line, Text: text})
}

// Done returns the kept diagnostics, with a last one saying how many more
// were not kept; nil when there were none.
func (l *List) Done() []Diag {
	if l.dropped > 0 {
		what := " "
		if l.What != "" {
			what = " " + l.What + " "
		}
		l.list = append(l.list, Diag{Text: fmt.Sprintf("%d more%snot kept", l.dropped, what)})
	}
	return l.list
}

// Clip trims s and cuts it to at most max bytes (plus "..."), on a rune
// boundary, with invalid UTF-8 replaced, for quoting an output line in a
// message.
func Clip(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// ReadLine reads the next line of br without its line break, cut to at
// most max bytes: the rest of a longer line is read and dropped, so an
// output without line breaks costs max bytes of memory, not its size. read
// is false when nothing was left to read; err is br's (io.EOF at the end,
// returned together with a last line that has no line break).
func ReadLine(br *bufio.Reader, max int) (line string, read bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		read = read || len(chunk) > 0
		if room := max - len(buf); room > 0 {
			buf = append(buf, chunk[:min(room, len(chunk))]...)
		}
		if err != bufio.ErrBufferFull {
			return strings.TrimRight(string(buf), "\r\n"), read, err
		}
	}
}

// Len returns how many diagnostics were added, kept or not.
func (l *List) Len() int { return len(l.list) + l.dropped }
