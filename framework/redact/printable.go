package redact

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Unprintable says whether r, written to a terminal or a text report,
// could do anything but show itself: C0 controls but line feed and tab
// (ESC starts CSI and OSC sequences, CR and BS write over a line that
// was shown: a FAIL row becomes a PASS), DEL, the C1 controls U+0080 to
// U+009F (U+009B is CSI to a terminal that reads 8-bit controls), the
// format characters of Unicode category Cf (the bidi overrides and
// isolates U+202A-U+202E, U+2066-U+2069, the marks U+200E, U+200F,
// U+061C, and the invisible U+200B-U+200D, U+2060-U+2064, U+FEFF, U+00AD
// that hide or reorder what is read), the line and paragraph separators
// U+2028, U+2029, and utf8.RuneError (a byte that is not UTF-8).
func Unprintable(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		return true
	case r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// Printable is s as a terminal or a text report (table.txt, summary.md,
// what gpuaccept prints) may show it: every Unprintable rune written as
// its Go escape (\r, \x1b, \u202e), a byte that is not UTF-8 as \xNN.
// Line feeds and tabs are kept. It is the one escaping of untrusted text
// (file names, benchmark output, host and test names) for every text
// writer and printer; JSON, HTML and XML have their own (PrintableJSON
// for what encoding/json leaves as it is). Printable(Printable(s)) is
// Printable(s).
func Printable(s string) string {
	if !strings.ContainsFunc(s, Unprintable) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == utf8.RuneError:
			b.WriteString(`\ufffd`) // QuoteRune would write it as it is
		case Unprintable(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// PrintableLine is Printable with line feeds and tabs escaped as well,
// for a field that is one line of a table or a list (a test name, a file
// name): a line feed in it would start a row of its own.
func PrintableLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(Printable(s))
}

// PrintableJSON rewrites, in a JSON document encoding/json wrote, every
// Unprintable rune it leaves in its strings (the C1 controls, the format
// characters such as U+202E; it escapes C0 controls and U+2028/U+2029
// itself) as a \uXXXX escape: the document decodes to the same values
// and shows on a terminal as it reads.
func PrintableJSON(doc []byte) []byte {
	if !bytes.ContainsFunc(doc, Unprintable) {
		return doc
	}
	var b bytes.Buffer
	for i := 0; i < len(doc); {
		r, n := utf8.DecodeRune(doc[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			// encoding/json writes only UTF-8; keep a byte as it was.
			b.WriteByte(doc[i])
		case r != '\n' && r != '\t' && r >= 0x20 && Unprintable(r):
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.Write(doc[i : i+n])
		}
		i += n
	}
	return b.Bytes()
}
