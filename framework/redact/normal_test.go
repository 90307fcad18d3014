package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// interleave puts sep between the characters of v.
func interleave(v, sep string) string {
	return strings.Join(strings.Split(v, ""), sep)
}

// perChar writes each byte of v with format f (a printf verb taking the
// byte or the rune).
func perChar(v, f string) string {
	var b strings.Builder
	for _, c := range v {
		fmt.Fprintf(&b, f, c)
	}
	return b.String()
}

func fullwidth(v string) string {
	var b strings.Builder
	for _, c := range v {
		if '!' <= c && c <= '~' {
			c += 0xfee0
		}
		b.WriteRune(c)
	}
	return b.String()
}

// encodings are the forms a tool or a shell writes a value in that a
// reader reads as the value (see normalView and encodedForms for where
// each is documented).
var encodings = []struct {
	what string
	enc  func(string) string
}{
	{"percent, every byte", func(v string) string { return perChar(v, "%%%02X") }},
	{"percent, lower case", func(v string) string { return perChar(v, "%%%02x") }},
	{"percent, every other byte", func(v string) string {
		var b strings.Builder
		for i := range len(v) {
			if i%2 == 0 {
				fmt.Fprintf(&b, "%%%02X", v[i])
			} else {
				b.WriteByte(v[i])
			}
		}
		return b.String()
	}},
	{"HTML decimal entities", func(v string) string { return perChar(v, "&#%d;") }},
	{"HTML hex entities", func(v string) string { return perChar(v, "&#x%x;") }},
	{"JSON \\u escapes", func(v string) string { return perChar(v, `\u%04x`) }},
	{"fullwidth", fullwidth},
	{"ZWSP", func(v string) string { return interleave(v, "\u200b") }},
	{"ZWNJ", func(v string) string { return interleave(v, "\u200c") }},
	{"ZWJ", func(v string) string { return interleave(v, "\u200d") }},
	{"soft hyphen", func(v string) string { return interleave(v, "\u00ad") }},
	{"BOM", func(v string) string { return interleave(v, "\ufeff") }},
	{"bidi marks", func(v string) string { return interleave(v, "\u200e\u202e\u2066") }},
	{"overstrike", func(v string) string { return interleave(v, "X\b") }},
	{"CR", func(v string) string { return interleave(v, "\r") }},
	{"NUL", func(v string) string { return interleave(v, "\x00") }},
	{"ESC", func(v string) string { return interleave(v, "\x1b[0m") }},
}

// A known value is masked in every encoding, with the text around it kept.
func TestKnownValueEncodings(t *testing.T) {
	const v = "Zq9xPLmW3vTr7Ka2"
	r := FromEnv([]string{"MY_API_TOKEN=" + v}, nil)
	type form struct{ what, in string }
	var forms []form
	for _, e := range encodings {
		forms = append(forms, form{e.what, e.enc(v)})
	}
	forms = append(forms, form{"hex", hex.EncodeToString([]byte(v))}, form{"HEX", strings.ToUpper(hex.EncodeToString([]byte(v)))})
	for a := range 3 {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			forms = append(forms, form{fmt.Sprintf("base64 at %d", a), enc.EncodeToString([]byte(strings.Repeat("ab", a) + v + "?>~"))})
		}
	}
	for _, f := range forms {
		in := "before " + f.in + " after\n"
		out := r.String(in)
		view, _, _ := normalView([]byte(out))
		assert.Assert(t, !bytes.Contains(view, []byte(v)), "%s: %q survives as %q", f.what, in, out)
		assert.Assert(t, strings.HasPrefix(out, "before ") && strings.HasSuffix(out, " after\n") && strings.Contains(out, Mask), "%s: %q gave %q", f.what, in, out)
		assert.Equal(t, out, "before "+Mask+" after\n", f.what)
		assert.Equal(t, r.String(out), out, "%s: masking twice changes more", f.what)
		line, err := r.Clear(strings.NewReader("ok\n" + in))
		assert.NilError(t, err)
		assert.Equal(t, line, 2, "%s: Clear misses it", f.what)
	}
	// Text with the same escapes and no known value keeps its bytes.
	for _, in := range []string{"100% done, 50%2F50 split", "caf\u00e9 &#233; \\u00e9 \uff21\u200b", "a\bb\rc"} {
		assert.Equal(t, r.String(in), in)
	}
}

// A token matched by its shape (no known value) is masked when a reader
// would see it whole.
func TestShapeTokenEncodings(t *testing.T) {
	const tok = "ghp_plantedShapeToken000000000000000000001"
	for _, e := range encodings {
		in := "token " + e.enc(tok) + " end"
		out := String(in)
		assert.Equal(t, out, "token "+Mask+" end", "%s: %q", e.what, in)
		line, err := (*Redactor)(nil).Clear(strings.NewReader(in))
		assert.NilError(t, err)
		assert.Equal(t, line, 1, "%s: Clear misses it", e.what)
	}
}

// A token by its shape inside base64 (either alphabet, padded or not) or
// hex (either case) is masked with its run. Base64 at the alignments
// where its prefix's form is a hint (5 characters or more: "ghp_" at 0
// and 2; at 1 it is "docF", which encodedTokenHints leaves out).
func TestShapeTokenEncoded(t *testing.T) {
	const tok = "ghp_plantedShapeToken000000000000000000001"
	for _, a := range []int{0, 2} {
		plain := []byte(strings.Repeat("{", a) + tok + `"}`)
		for _, in := range []string{base64.StdEncoding.EncodeToString(plain), base64.RawURLEncoding.EncodeToString(plain),
			hex.EncodeToString(plain), strings.ToUpper(hex.EncodeToString(plain))} {
			assert.Equal(t, String("blob "+in+" end"), "blob "+Mask+" end", "%d: %s", a, in)
		}
	}
}

// normalView never panics and maps each byte of its view into the line.
func FuzzNormalView(f *testing.F) {
	for _, s := range []string{"%5A%7", "&#90;&#x;&#99999999;", "\\u00", "a\b\b\bb", "\x1b[", "\xef\xbc", "\u200bｇ"} {
		f.Add([]byte(s))
	}
	r := New("Zq9xPLmW3vTr7Ka2")
	f.Fuzz(func(t *testing.T, b []byte) {
		view, from, to := normalView(b)
		if len(view) != len(from) || len(view) != len(to) {
			t.Fatalf("view %d bytes, from %d, to %d", len(view), len(from), len(to))
		}
		for i := range from {
			if from[i] < 0 || from[i] >= to[i] || to[i] > len(b) {
				t.Fatalf("byte %d maps to [%d,%d) of %d", i, from[i], to[i], len(b))
			}
		}
		r.Bytes(b)
	})
}
