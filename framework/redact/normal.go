package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode/utf8"
)

// A secret may reach a file in a form a reader sees as the secret but
// that holds other bytes: each byte percent-encoded or not (RFC 3986
// section 2.1, either case), as HTML numeric character references (HTML
// Living Standard 13.1.4), as JSON \uXXXX escapes (RFC 8259 section 7),
// in fullwidth forms (Unicode block FF00-FFEF), with invisible characters
// between its characters (ZWSP, ZWNJ, ZWJ, soft hyphen, BOM, bidi marks:
// Unicode's Default_Ignorable_Code_Point), with a character and a
// backspace (an overstrike: a terminal shows the next character in its
// place), a carriage return, NULs or escape sequences between them. The
// line's view (normalView) is the text with these decoded or dropped, each
// byte of it knowing where in the line it came from, so a match in the
// view masks the bytes it came from.

// hasTrigger reports whether data holds a form the view may change: NUL,
// BS, ESC, a CR not ending a line, "%" and two hex digits, "\\u", "&#", or
// the UTF-8 of U+00AD, U+2000-U+207F or U+FEFF-U+FF7F (the invisible and
// fullwidth characters). Each byte is looked for with IndexByte (SIMD),
// so that a log of numbers pays almost nothing; a "%" or a CR of a
// progress line is looked at one by one.
func hasTrigger(data []byte) bool {
	if bytes.IndexByte(data, 0) >= 0 || bytes.IndexByte(data, '\b') >= 0 || bytes.IndexByte(data, 0x1b) >= 0 {
		return true
	}
	follows := func(c byte, ok func(next byte) bool) bool {
		for off := 0; ; {
			i := bytes.IndexByte(data[off:], c)
			if i < 0 {
				return false
			}
			off += i + 1
			if off < len(data) && ok(data[off]) {
				return true
			}
		}
	}
	hexDigit := func(b byte) bool { _, ok := unhex(b); return ok }
	return follows('%', hexDigit) ||
		follows('\r', func(b byte) bool { return b != '\n' }) ||
		follows('\\', func(b byte) bool { return b == 'u' }) ||
		follows('&', func(b byte) bool { return b == '#' }) ||
		follows(0xc2, func(b byte) bool { return b == 0xad }) ||
		follows(0xe2, func(b byte) bool { return b == 0x80 || b == 0x81 }) ||
		follows(0xef, func(b byte) bool { return b == 0xbb || b == 0xbc || b == 0xbd })
}

// escapeAt matches, at the start of a text, an escape sequence a terminal
// does not show (splitter's forms).
var escapeAt = regexp.MustCompile("^\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|[@-_])?")

// invisible reports whether a terminal or a browser shows r as nothing:
// soft hyphen, the zero-width space, non-joiner and joiner, the
// left-to-right and right-to-left marks, word joiner and bidi embeddings,
// overrides and isolates, and the BOM (zero-width no-break space).
func invisible(r rune) bool {
	switch {
	case r == 0xad, r == 0xfeff, r == 0x180e:
		return true
	case 0x200b <= r && r <= 0x200f, 0x202a <= r && r <= 0x202e, 0x2060 <= r && r <= 0x2069:
		return true
	}
	return false
}

// narrow is r with a fullwidth form (U+FF01-U+FF5E, U+3000) read as the
// ASCII character it stands for.
func narrow(r rune) rune {
	switch {
	case 0xff01 <= r && r <= 0xff5e:
		return r - 0xfee0
	case r == 0x3000:
		return ' '
	}
	return r
}

// namedEntities are the HTML and XML character references escaping
// writers use for ASCII.
var namedEntities = map[string]byte{"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\''}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// hexRune reads the hexadecimal number h (at most 6 digits), -1 when h
// holds another byte.
func hexRune(h []byte) rune {
	if len(h) == 0 || len(h) > 6 {
		return -1
	}
	var r rune
	for _, c := range h {
		d, ok := unhex(c)
		if !ok {
			return -1
		}
		r = r<<4 | rune(d)
	}
	return r
}

// decodeAt decodes the escape, if any, that body[i:] starts with: its
// rune (or byte, raw) and length; n is 0 when there is none.
func decodeAt(body []byte, i int) (r rune, raw bool, n int) {
	switch body[i] {
	case '%':
		if i+2 < len(body) {
			if h, ok := unhex(body[i+1]); ok {
				if l, ok := unhex(body[i+2]); ok {
					return rune(h<<4 | l), true, 3
				}
			}
		}
	case '\\':
		if i+5 < len(body) && body[i+1] == 'u' {
			if r := hexRune(body[i+2 : i+6]); r >= 0 {
				return r, false, 6
			}
		}
	case '&':
		end := bytes.IndexByte(body[i:min(len(body), i+10)], ';')
		if end < 2 {
			return 0, false, 0
		}
		ref := body[i+1 : i+end]
		if ref[0] == '#' {
			var r rune = -1
			if len(ref) > 2 && (ref[1] == 'x' || ref[1] == 'X') {
				r = hexRune(ref[2:])
			} else if len(ref) > 1 && len(ref) <= 8 {
				r = 0
				for _, c := range ref[1:] {
					if c < '0' || c > '9' {
						r = -1
						break
					}
					r = r*10 + rune(c-'0')
				}
			}
			if r >= 0 && r <= utf8.MaxRune {
				return r, false, end + 1
			}
		} else if c, ok := namedEntities[string(ref)]; ok {
			return rune(c), true, end + 1
		}
	}
	return 0, false, 0
}

// normalView is body as a reader sees it (see above): view, and for each
// of its bytes the range [from, to) of body it stands for. Most lines
// need none of it: callers ask first with hasTrigger.
func normalView(body []byte) (view []byte, from, to []int) {
	return normalize(body, true)
}

// normalize is normalView, the ranges left out when mapped is false (a
// chunk's quick test needs the text only).
func normalize(body []byte, mapped bool) (view []byte, from, to []int) {
	view = make([]byte, 0, len(body))
	if mapped {
		from = make([]int, 0, len(body))
		to = make([]int, 0, len(body))
	}
	put := func(b []byte, s, e int) {
		view = append(view, b...)
		if mapped {
			for range b {
				from = append(from, s)
				to = append(to, e)
			}
		}
	}
	var enc [utf8.UTFMax]byte
	putRune := func(r rune, s, e int) {
		if invisible(r) {
			return
		}
		r = narrow(r)
		if r < utf8.RuneSelf {
			put([]byte{byte(r)}, s, e)
			return
		}
		n := utf8.EncodeRune(enc[:], r)
		put(enc[:n], s, e)
	}
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == 0 || c == '\r':
			i++
			continue
		case c == 0x1b:
			i += max(1, len(escapeAt.Find(body[i:])))
			continue
		case c == '\b':
			// An overstrike: the character before goes, the next shows.
			if len(view) > 0 {
				k := len(view) - 1
				for k > 0 && view[k]&0xc0 == 0x80 {
					k--
				}
				view = view[:k]
				if mapped {
					from, to = from[:k], to[:k]
				}
			}
			i++
			continue
		case c == '%' || c == '\\' || c == '&':
			if r, raw, n := decodeAt(body, i); n > 0 {
				if raw {
					put([]byte{byte(r)}, i, i+n)
				} else {
					putRune(r, i, i+n)
				}
				i += n
				continue
			}
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(body[i:])
			if r != utf8.RuneError {
				putRune(r, i, i+n)
				i += n
				continue
			}
		}
		put(body[i:i+1], i, i+1)
		i++
	}
	return view, from, to
}

// maskSpans is body with each of spans (sorted by start; they may
// overlap) replaced by one Mask.
func maskSpans(body []byte, spans []span) []byte {
	if len(spans) == 0 {
		return body
	}
	out := make([]byte, 0, len(body))
	last := 0
	for i := 0; i < len(spans); {
		s, e := spans[i].start, spans[i].end
		for i++; i < len(spans) && spans[i].start < e; i++ {
			e = max(e, spans[i].end)
		}
		if s < last {
			s = last
		}
		out = append(append(out, body[last:s]...), Mask...)
		last = e
	}
	return append(out, body[last:]...)
}

// viewSpans lists where in body the view of it holds one of needles
// (known values, as their own views) or a token by its shape: the bytes
// of body each comes from, sorted by start.
func viewSpans(body []byte, needles [][]byte) []span {
	view, from, to := normalView(body)
	var out []span
	add := func(s, e int) {
		out = append(out, span{from[s], to[e-1]})
	}
	for _, k := range needles {
		for off := 0; ; {
			i := bytes.Index(view[off:], k)
			if i < 0 {
				break
			}
			add(off+i, off+i+len(k))
			off += i + len(k)
		}
	}
	if allHints.present(view)&tokenRule.hintBits != 0 {
		for _, m := range tokenRule.re.FindAllIndex(view, -1) {
			add(m[0], m[1])
		}
	}
	if len(out) > 1 {
		sortSpans(out)
	}
	return out
}

func sortSpans(s []span) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].start < s[j-1].start; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// maskViewed masks in body (a line, no line break) the known values of r
// and the tokens by their shape that its view holds: a line with none of
// triggers is returned as it is.
func (r *Redactor) maskViewed(body []byte) []byte {
	if !hasTrigger(body) {
		return body
	}
	var needles [][]byte
	if r != nil {
		needles = r.views
	}
	return maskSpans(body, viewSpans(body, needles))
}

// viewHolds reports whether the view of data (several lines) holds a
// known value of r or a hint of any rule: what quiet asks of a chunk that
// holds a trigger. Only the lines that hold a trigger are viewed.
func (r *Redactor) viewHolds(data []byte) bool {
	// next[k]: where the next triggerLeads[k] is at or after the line
	// looked at (len(data) for none): each byte is looked for with
	// IndexByte (SIMD), once over the chunk.
	var next [len(triggerLeads)]int
	find := func(k, from int) {
		next[k] = len(data)
		if j := bytes.IndexByte(data[from:], triggerLeads[k]); j >= 0 {
			next[k] = from + j
		}
	}
	for k := range triggerLeads {
		find(k, 0)
	}
	for {
		i := len(data)
		for _, n := range next {
			i = min(i, n)
		}
		if i == len(data) {
			return false
		}
		s := bytes.LastIndexByte(data[:i], '\n') + 1
		e := len(data)
		if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
			e = i + j
		}
		if line := data[s:e]; hasTrigger(line) {
			view, _, _ := normalize(line, false)
			if allHints.in(view) {
				return true
			}
			if r != nil {
				for _, k := range r.views {
					if bytes.Contains(view, k) {
						return true
					}
				}
			}
		}
		for k, n := range next {
			if n <= e {
				find(k, min(len(data), e+1))
			}
		}
	}
}

// triggerLeads are the first bytes of what hasTrigger looks for.
var triggerLeads = [...]byte{0, '\b', '\r', 0x1b, '%', '\\', '&', 0xc2, 0xe2, 0xef}

// tokenRule is the rule of tokens by their shape (ghp_, glpat-, AKIA...),
// which the view is matched against too.
var tokenRule = func() *rule {
	for _, ru := range rules {
		if ru.name == "token-formats" {
			return ru
		}
	}
	panic("redact: no token-formats rule")
}()

// minEncoded is the shortest known value masked in its base64 and hex
// forms: the base64 of a shorter one, a few characters, would be found in
// unrelated base64 and hex.
const minEncoded = 8

// encodedForms are v's hex (either case) and its base64 in the standard
// and URL alphabets at each of the three alignments it can start at in a
// longer encoded text: at each, the characters that only v's bytes
// determine (RFC 4648 sections 4, 5 and 8).
func encodedForms(v string) (hexForms, forms []string) {
	if len(v) < minEncoded {
		return nil, nil
	}
	h := hex.EncodeToString([]byte(v))
	hexForms = []string{h, strings.ToUpper(h)}
	for a := range 3 {
		enc := base64.StdEncoding.EncodeToString(append(make([]byte, a), v...))
		// Bits [8a, 8a+8n) are v's; character c holds bits [6c, 6c+6).
		first := (8*a + 5) / 6
		last := (8*a + 8*len(v)) / 6
		std := enc[first:last]
		forms = append(forms, std, strings.NewReplacer("+", "-", "/", "_").Replace(std))
	}
	return hexForms, forms
}

func base64Char(c byte) bool { return isBase64(c) || c == '-' || c == '_' }

// maskInRun is body with each occurrence of k and the base64 run it lies
// in (its padding too) replaced by Mask: the characters next to k's hold
// bits of the value.
func maskInRun(body, k []byte) []byte {
	var out []byte
	last := 0
	for off := 0; ; {
		i := bytes.Index(body[off:], k)
		if i < 0 {
			break
		}
		s, e := off+i, off+i+len(k)
		for s > last && base64Char(body[s-1]) {
			s--
		}
		for e < len(body) && base64Char(body[e]) {
			e++
		}
		for e < len(body) && body[e] == '=' {
			e++
		}
		out = append(append(out, body[last:s]...), Mask...)
		last, off = e, e
	}
	return append(out, body[last:]...)
}

// tokenPrefixes are the fixed starts of the token formats (the
// token-formats rule) long enough that their encodings make hints.
var tokenPrefixes = []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xoxb-", "xoxp-", "xoxa-", "xoxo-", "xoxr-", "xoxs-", "xoxe-", "xapp-",
	"AKIA", "ASIA", "glpat-", "npm_", "AIza", "sk-proj-", "sk-ant-", "sk_live_", "rk_live_", "ya29.", "nvapi-", "pypi-AgE", "dckr_pat_", "dckr_oat_", "hvs.", "hvb.", "hvr."}

// encodedTokenHints are the hex and base64 (standard and URL, at each
// alignment) of tokenPrefixes, lower-cased as hints are: what a token so
// encoded starts with. Forms shorter than 5 characters, or all digits,
// would meet ordinary text and numbers too often (hints are matched in
// any case) and are left out: such a prefix is found at the alignments
// where its form is longer.
var encodedTokenHints = func() []string {
	seen := map[string]bool{}
	var out []string
	add := func(f string) {
		f = strings.ToLower(f)
		if len(f) >= 5 && strings.Trim(f, "0123456789") != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for _, p := range tokenPrefixes {
		add(hex.EncodeToString([]byte(p)))
		for a := range 3 {
			enc := base64.StdEncoding.EncodeToString(append(make([]byte, a), p...))
			f := enc[(8*a+5)/6 : (8*a+8*len(p))/6]
			add(f)
			add(strings.NewReplacer("+", "-", "/", "_").Replace(f))
		}
	}
	return out
}()

func init() {
	for _, ru := range rules {
		if ru.name == "encoded-token" {
			ru.mask = encodedToken
		}
	}
}

// encodedToken masks match m of line, a run of base64 or hex, when it
// decodes to text holding a token by its shape: hex, or base64 in either
// alphabet starting at any of the run's first 4 characters.
func encodedToken(line []byte, m []int) []byte {
	run := bytes.TrimRight(line[m[0]:m[1]], "=")
	var decoded [][]byte
	h := run
	if len(h) > 2 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X') {
		h = h[2:] // C's and the shells' 0x
	}
	for a := range 2 {
		if d, err := hex.DecodeString(string(h[a : a+(len(h)-a)/2*2])); err == nil {
			decoded = append(decoded, d)
		}
	}
	for a := range 4 {
		if a >= len(run) {
			break
		}
		r := run[a:]
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			n := len(r)
			if n%4 == 1 {
				n-- // no whole byte in a last character alone
			}
			if d, err := enc.DecodeString(string(r[:n])); err == nil {
				decoded = append(decoded, d)
			}
		}
	}
	for _, d := range decoded {
		if tokenRule.re.Match(d) {
			return []byte(Mask)
		}
	}
	return nil
}
