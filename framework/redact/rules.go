package redact

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"strings"
)

// valueRE is a value after "=" or ":": an escaped-quoted string inside a
// JSON string (\"...\"), a quoted one, or a word up to a blank, a quote, a
// closing bracket or a trailing comma (commas inside stay part of it). A
// quote that is not closed runs to the end: the rest of the line, or of a
// piece of a line cut short. No match ends inside a JSON escape, so a
// masked JSON stays valid.
const valueRE = `\\"(?:[^"\\\n]|\\[^"\n])*(?:\\"|$)` +
	`|"(?:[^"\\\n]|\\.)*(?:"|$)` +
	`|'[^'\n]*(?:'|$)` +
	`|(?:[^\s"'\\,}\]]|\\[^"\s])+(?:,(?:[^\s"'\\,}\]]|\\[^"\s])+)*`

// pemLabel is the label of a private key's PEM armour (RFC 7468): RSA
// PRIVATE KEY, OPENSSH PRIVATE KEY, ENCRYPTED PRIVATE KEY, PGP PRIVATE KEY
// BLOCK, ... Certificates and public keys are left alone.
const pemLabel = `[A-Z0-9 ]*PRIVATE KEY[A-Z ]*`

var (
	pemBegin = regexp.MustCompile(`-----BEGIN ` + pemLabel + `-----`)
	pemEnd   = regexp.MustCompile(`-----END ` + pemLabel + `-----`)
)

// rule is one masking pattern. It runs on a line whose lower-cased text
// holds one of its hints (every match holds one), so the lines of a
// benchmark's table skip the regular expressions.
type rule struct {
	name  string
	hints []string
	re    *regexp.Regexp
	// mask returns the replacement of match m (submatch offsets into
	// line), or nil to leave it; it may move the match's end, m[1],
	// further.
	mask func(line []byte, m []int) []byte
	// retry, when set, is the submatch where the search goes on after a
	// match mask left: rules matching any name=value look into the value
	// of one that holds no secret (X=HF_TOKEN=...).
	retry int
}

// placeholder is a value of usage text (KEY=VALUE), not of a secret.
var placeholder = regexp.MustCompile(`^[A-Z]+(?:_[A-Z]+)*[).:;]*$`)

// secretFlag matches the words of a flag name that takes a secret.
var secretFlag = regexp.MustCompile(`(?i)token|password|passwd|passphrase|secret|api-?key|auth|credential|jwt`)

// nameHints are fragments every secret name holds, lower-cased.
var nameHints = []string{"token", "secret", "pass", "key", "auth", "credential", "cookie", "jwt", "webhook", "pwd", "signature",
	"_pat", "pat_", "-pat", "pat-"}

var urlHints = []string{"://", `:\/\/`}

// rules run in this order, each on what the ones before left.
var rules = []*rule{
	// A PEM private key on one line: a JSON string, an env entry.
	{name: "pem", hints: []string{"private key"},
		re:   regexp.MustCompile(`(-----BEGIN ` + pemLabel + `-----)(.*?)(-----END ` + pemLabel + `-----)`),
		mask: group(2)},
	// The base64 of a PEM private key (kubeconfig client-key-data, a
	// Kubernetes Secret's data): "LS0tLS1CRUdJTi" is "-----BEGIN".
	{name: "pem-base64", hints: []string{"ls0tls1crudjt"},
		re: regexp.MustCompile(`LS0tLS1CRUdJTi(?:[A-Za-z0-9+]|\\?/)*={0,2}`),
		mask: func(line []byte, m []int) []byte {
			b64 := bytes.ReplaceAll(line[m[0]:m[1]], []byte(`\/`), []byte("/"))
			b64 = bytes.TrimRight(b64, "=")
			dec, _ := base64.RawStdEncoding.DecodeString(string(b64[:len(b64)/4*4]))
			if bytes.Contains(dec, []byte("PRIVATE KEY")) {
				return []byte(Mask)
			}
			return nil
		}},
	// Tokens by their documented prefixes and shapes (see
	// testdata/secrets.yaml for where each is documented).
	{name: "token-formats", hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "xapp-", "hf_", "akia", "asia", "glpat-", "npm_", "aiza", "eyj"},
		re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}|xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}` +
			`|hf_[A-Za-z0-9]{30,}|(?:AKIA|ASIA)[A-Z0-9]{16}\b|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|AIza[0-9A-Za-z_-]{35}` +
			`|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)`),
		mask: group(0)},
	{name: "slack-webhook", hints: []string{"hooks.slack.com"},
		re:   regexp.MustCompile(`(hooks\.slack\.com(?:\\?/)services(?:\\?/))((?:[A-Za-z0-9_-]|\\?/)+)`),
		mask: group(2)},
	// Azure SAS: the signature of a URL's query (& escaped as JSON and
	// HTML do).
	{name: "sas-signature", hints: []string{"sig="},
		re:   regexp.MustCompile(`((?:[?&;]|\\u0026|&amp;|&#38;)sig=)((?:[A-Za-z0-9%+=._~-]|\\?/)+)`),
		mask: group(2)},
	{name: "url-password", hints: urlHints,
		re:   regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*:(?:\\?/){2}[^/\s:@\\"'<>]+:)([^@\s/\\"'<>]+)@`),
		mask: group(2)},
	// A user alone in a URL: a token for HTTPS (git takes
	// https://TOKEN@host), a name elsewhere (ssh://git@host) unless it
	// looks like a token.
	{name: "url-token", hints: urlHints,
		re: regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*):((?:\\?/){2})([^/\s:@\\"'<>]+)@`),
		mask: func(line []byte, m []int) []byte {
			scheme := strings.ToLower(string(line[m[2]:m[3]]))
			user := line[m[6]:m[7]]
			if !strings.HasPrefix(strings.TrimPrefix(scheme, "git+"), "http") && !tokenLike(user) {
				return nil
			}
			return group(3)(line, m)
		}},
	{name: "sshpass", hints: []string{"sshpass"},
		re:   regexp.MustCompile(`\bsshpass\b((?:[ \t]+-[a-oq-zA-Z][^ \t]*)*)([ \t]+-p[ \t]*)('[^']*(?:'|$)|"[^"]*(?:"|$)|[^\s'"\\]+)`),
		mask: group(3)},
	// curl -u user:password (and --user, --proxy-user); a uid:gid is no
	// password.
	{name: "user-option", hints: []string{"-u", "--user", "--proxy-user"},
		re: regexp.MustCompile(`(?:^|[\s"'])(?:-u|--user|--proxy-user)(?:[ \t]+|=)['"]?([^\s:'"@/\\]+):([^\s'"\\]+)`),
		mask: func(line []byte, m []int) []byte {
			if allDigits(line[m[2]:m[3]]) && allDigits(line[m[4]:m[5]]) {
				return nil
			}
			return group(2)(line, m)
		}},
	// Authorization headers of any scheme (Bearer, Basic, Token, ...): the
	// scheme stays.
	{name: "authorization", hints: []string{"authorization"},
		re:   regexp.MustCompile(`(?i)\b((?:proxy-)?authorization\\?"?[ \t]*[:=][ \t]*\\?"?[ \t]*)(?:([a-z][a-z0-9_.-]*)([ \t]+))?([^\s"'\\,;]+)`),
		mask: group(4)},
	// Bearer or Basic credentials without a header; a word after "basic"
	// in prose has no digit or base64 padding.
	{name: "bearer", hints: []string{"bearer", "basic"},
		re: regexp.MustCompile(`(?i)\b(bearer|basic)([ \t]+)([A-Za-z0-9._~+/=-]{8,})`),
		mask: func(line []byte, m []int) []byte {
			if v := line[m[6]:m[7]]; len(v) < 20 && !bytes.ContainsAny(v, "0123456789+/=") {
				return nil
			}
			return group(3)(line, m)
		}},
	// --password value, --auth-token=value, -token value; --token-file
	// names a file.
	{name: "flag", hints: nameHints, retry: 3,
		re: regexp.MustCompile(`(?:^|[\s"'=])(--?[A-Za-z0-9][A-Za-z0-9-]*)(=|[ \t]+)(` + valueRE + `)`),
		mask: func(line []byte, m []int) []byte {
			name, v := strings.TrimLeft(string(line[m[2]:m[3]]), "-"), line[m[6]:m[7]]
			if bytes.HasPrefix(v, []byte("-")) || !secretFlag.MatchString(name) || notSecret(name) {
				return nil // the next flag, not a value; another flag; or a reference
			}
			return group(3)(line, m)
		}},
	// "NAME=value" as a JSON string (nccl-tests' -J env array): the value
	// runs to the closing quote, blanks included.
	{name: "json-entry", hints: nameHints, retry: 2,
		re: regexp.MustCompile(`"([A-Za-z0-9_-]+)=((?:[^"\\]|\\.)*)(?:"|$)`),
		mask: func(line []byte, m []int) []byte {
			if !SecretName(string(line[m[2]:m[3]])) {
				return nil
			}
			return group(2)(line, m)
		}},
	// NAME=value, NAME: value, "NAME": "value", \"name\":\"value\",
	// export NAME='a b'; on one line, so "secret:" ending a YAML line
	// does not mask the next one.
	{name: "assignment", hints: nameHints, retry: 3,
		re: regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])([A-Za-z0-9_-]+)(\\?"?[ \t]*[=:][ \t]*)(` + valueRE + `)`),
		mask: func(line []byte, m []int) []byte {
			name, sep, v := line[m[2]:m[3]], line[m[4]:m[5]], line[m[6]:m[7]]
			switch {
			case !SecretName(string(name)), isMasked(v):
				return nil
			case bytes.Contains(bytes.ToLower(name), []byte("authorization")):
				return nil // the authorization rule keeps the scheme
			case bareKey(name) && bytes.IndexByte(sep, ':') >= 0:
				return nil // a manifest's "key: nvidia.com/gpu", a verdict's "PASS: ..."
			case bareKey(name) && placeholder.Match(v):
				return nil // usage text: --param KEY=VALUE
			case v[0] == '{' || v[0] == '[':
				return nil // a structure: its secret members are masked one by one
			}
			return group(3)(line, m)
		}},
	// user:password@host without a scheme (an error echoing --hosts); an
	// image's name:tag@sha256:... is no password.
	{name: "user-password-host", hints: []string{"@"},
		re: regexp.MustCompile(`(?:^|[\s"'=(,\[])([A-Za-z_][A-Za-z0-9._-]*):([^\s@/:"'\\]+)@([A-Za-z0-9][A-Za-z0-9.-]*)`),
		mask: func(line []byte, m []int) []byte {
			if bytes.HasPrefix(line[m[6]:m[7]], []byte("sha")) {
				return nil
			}
			return group(2)(line, m)
		}},
}

// allHints are the hints of every rule, for the quick test of a whole
// chunk of lines, indexed by their first two bytes (lower case): one pass
// over a table of numbers finds none.
var allHints = func() (h hintSet) {
	seen := map[string]bool{}
	for _, r := range rules {
		for _, w := range append(r.hints, "-----begin") {
			if !seen[w] {
				seen[w] = true
				if len(w) == 1 {
					h.single[w[0]] = true
					continue
				}
				k := &h.pair[w[0]][w[1]]
				if *k == 0 {
					h.lists = append(h.lists, nil)
					*k = uint8(len(h.lists))
				}
				h.lists[*k-1] = append(h.lists[*k-1], []byte(w))
			}
		}
	}
	return h
}()

// hintSet finds hints by their first two bytes: pair holds 1 + the index
// in lists of the hints that start with them, 0 for none.
type hintSet struct {
	single [256]bool
	pair   [256][256]uint8
	lists  [][][]byte
}

// lowerOf maps a byte to its ASCII lower case.
var lowerOf = func() (t [256]byte) {
	for i := range t {
		c := byte(i)
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		t[i] = c
	}
	return t
}()

// in reports whether data holds any hint, in any case.
func (h *hintSet) in(data []byte) bool {
	for i := 0; i < len(data); i++ {
		a := lowerOf[data[i]]
		if h.single[a] {
			return true
		}
		if i+1 >= len(data) {
			break
		}
		k := h.pair[a][lowerOf[data[i+1]]]
		if k == 0 {
			continue
		}
		for _, w := range h.lists[k-1] {
			if i+len(w) <= len(data) && foldedPrefix(data[i:], w) {
				return true
			}
		}
	}
	return false
}

// foldedPrefix: b starts with the lower-case w, in any case.
func foldedPrefix(b, w []byte) bool {
	for j, c := range w {
		if lowerOf[b[j]] != c {
			return false
		}
	}
	return true
}

// group returns a mask that replaces submatch g (0: the whole match) with
// Mask, keeping its quotes; nil when it is masked already.
func group(g int) func(line []byte, m []int) []byte {
	return func(line []byte, m []int) []byte {
		s, e, end := m[2*g], m[2*g+1], m[1]
		if s < 0 || isMasked(line[s:e]) {
			return nil
		}
		// A value that ends in a Mask an earlier rule put there takes the
		// Mask's "]" along, which the value's word stopped before.
		if e == end && e < len(line) && line[e] == ']' && bytes.HasSuffix(line[s:e], []byte(Mask[:len(Mask)-1])) {
			e, end = e+1, end+1
			m[1] = end // the rule's apply goes on after it
		}
		out := make([]byte, 0, end-m[0]+len(Mask))
		out = append(out, line[m[0]:s]...)
		out = append(out, maskValue(line[s:e])...)
		return append(out, line[e:end]...)
	}
}

// maskValue is Mask in the quotes of v: "x" gives "[REDACTED]", \"x\"
// gives \"[REDACTED]\", an unclosed "x stays unclosed.
func maskValue(v []byte) []byte {
	for _, q := range []string{`\"`, `"`, `'`} {
		if bytes.HasPrefix(v, []byte(q)) {
			if len(v) >= 2*len(q) && bytes.HasSuffix(v, []byte(q)) {
				return []byte(q + Mask + q)
			}
			return []byte(q + Mask)
		}
	}
	return []byte(Mask)
}

func isMasked(v []byte) bool {
	v = bytes.Trim(v, `'"\`)
	return bytes.HasPrefix([]byte(Mask), v) || bytes.HasPrefix(v, []byte(Mask))
}

func bareKey(name []byte) bool {
	return bytes.EqualFold(name, []byte("key")) || bytes.EqualFold(name, []byte("pass"))
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// tokenLike: long, with letters and digits, as generated tokens are and
// user names mostly are not.
func tokenLike(b []byte) bool {
	return len(b) >= 16 && bytes.ContainsAny(b, "0123456789") && bytes.ContainsAny(b, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

// apply runs the rule over line; it returns line itself when nothing was
// masked.
func (ru *rule) apply(line []byte) []byte {
	var out []byte
	last := 0
	for at := 0; at <= len(line); {
		m := ru.re.FindSubmatchIndex(line[at:])
		if m == nil {
			break
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += at
			}
		}
		rep := ru.mask(line, m)
		if rep == nil {
			switch {
			case ru.retry > 0 && m[2*ru.retry] > at:
				at = m[2*ru.retry]
			case m[1] > at:
				at = m[1]
			default:
				at++
			}
			continue
		}
		out = append(out, line[last:m[0]]...)
		out = append(out, rep...)
		last, at = m[1], max(m[1], at+1)
	}
	if out == nil {
		return line
	}
	return append(out, line[last:]...)
}

// state is what masking carries from one line, or piece of a line, to the
// next.
type state struct {
	// inPEM: a private key's BEGIN line was seen, its END not yet.
	inPEM bool
	// skip, when set, holds the bytes that end a secret value that was
	// masked up to a cut of its line: what follows the cut is dropped up
	// to one of them.
	skip string
	// lower is scratch for the lower-cased line.
	lower []byte
}

// Terminators of a value masked up to a cut (state.skip).
const (
	skipWord   = " \t\r\n\"',}]"
	skipDouble = "\"\n"
	skipSingle = "'\n"
)

func toLower(dst, src []byte) []byte {
	if cap(dst) < len(src) {
		dst = make([]byte, len(src))
	}
	dst = dst[:len(src)]
	for i, c := range src {
		dst[i] = lowerOf[c]
	}
	return dst
}

// quiet reports whether data can pass unchanged without looking at its
// lines: no rule's hint, no known value, no key open.
func (r *Redactor) quiet(st *state, data []byte) bool {
	if st.inPEM || st.skip != "" {
		return false
	}
	if r != nil {
		for _, k := range r.known {
			if bytes.Contains(data, k) {
				return false
			}
		}
	}
	return !allHints.in(data)
}

// chunkSize is how much masking looks at at once: long enough that a
// table of numbers passes in big pieces, short enough that one hint does
// not send a whole file line by line.
const chunkSize = 64 << 10

// chunk writes data, complete lines (the last one may lack its newline),
// masked to out.
func (r *Redactor) chunk(st *state, out *bytes.Buffer, data []byte) {
	for len(data) > 0 {
		n := len(data)
		if n > chunkSize {
			if i := bytes.IndexByte(data[chunkSize:], '\n'); i >= 0 {
				n = chunkSize + i + 1
			}
		}
		piece := data[:n]
		data = data[n:]
		if r != nil {
			// A known value of many lines (a key in a variable) is masked
			// before the lines are.
			for _, k := range r.known {
				if bytes.IndexByte(k, '\n') >= 0 && bytes.Contains(piece, k) {
					piece = bytes.ReplaceAll(piece, k, []byte(Mask))
				}
			}
		}
		if r.quiet(st, piece) {
			out.Write(piece)
			continue
		}
		for len(piece) > 0 {
			line := piece
			if i := bytes.IndexByte(piece, '\n'); i >= 0 {
				line = piece[:i+1]
			}
			piece = piece[len(line):]
			out.Write(r.segment(st, line))
		}
	}
}

// segment masks one line, with its line break if it has one, or a piece
// of a line cut short (the rest follows).
func (r *Redactor) segment(st *state, seg []byte) []byte {
	body, eol := seg, []byte(nil)
	if bytes.HasSuffix(body, []byte("\n")) {
		body, eol = body[:len(body)-1], body[len(body)-1:]
		if bytes.HasSuffix(body, []byte("\r")) {
			body, eol = body[:len(body)-1], seg[len(body)-1:]
		}
	}
	if st.skip != "" {
		i := bytes.IndexAny(body, st.skip)
		if i < 0 && eol == nil {
			return nil // all of it is the rest of the masked value
		}
		if i < 0 {
			i = len(body)
		}
		body = body[i:]
		st.skip = ""
	}
	if r != nil {
		for _, k := range r.known {
			if bytes.Contains(body, k) {
				body = bytes.ReplaceAll(body, k, []byte(Mask))
			}
		}
	}
	var head []byte
	if st.inPEM {
		loc := pemEnd.FindIndex(body)
		if loc == nil {
			return join(maskedBody(body), eol)
		}
		st.inPEM = false
		head = maskedBody(body[:loc[0]])
		body = body[loc[0]:]
	}
	// The last key begun on the line, if no END follows it, goes on.
	if locs := pemBegin.FindAllIndex(body, -1); locs != nil && pemEnd.FindIndex(body[locs[len(locs)-1][1]:]) == nil {
		loc := locs[len(locs)-1]
		// The key's lines follow, through its END line.
		st.inPEM = true
		return join(head, r.rules(st, body[:loc[1]]), maskedBody(body[loc[1]:]), eol)
	}
	return join(head, r.rules(st, body), eol)
}

// maskedBody is Mask in place of a key's line, its indentation kept; a
// blank line stays.
func maskedBody(b []byte) []byte {
	t := bytes.TrimLeft(b, " \t")
	if len(bytes.TrimSpace(t)) == 0 || isMasked(t) {
		return b
	}
	return append(append([]byte{}, b[:len(b)-len(t)]...), Mask...)
}

// longLine is the length from which a line is masked in parts: its JSON
// elements one by one (a -J JSON is one line, its env array hundreds of
// strings), so only the elements holding a hint meet the regular
// expressions.
const longLine = 4 << 10

// rules applies every rule whose hint the line holds; a long line's JSON
// elements are masked one by one. An element ends where a string of a
// JSON array or object ends and the next one starts ("a","b" or "a",
// "b"): no JSON string holds that (its quotes would be escaped), and no
// masking needs to reach across it.
func (r *Redactor) rules(st *state, line []byte) []byte {
	if len(line) < longLine {
		return r.part(st, line)
	}
	var out []byte
	last := 0
	for at := 0; ; {
		i := bytes.Index(line[at:], []byte(`",`))
		if i < 0 {
			break
		}
		at += i + 2
		next := at
		for next < len(line) && (line[next] == ' ' || line[next] == '\t') {
			next++
		}
		if next < len(line) && line[next] == '"' {
			// The next element's opening quote starts the next part.
			out = append(out, r.part(st, line[last:next])...)
			last = next
		}
	}
	return append(out, r.part(st, line[last:])...)
}

// part applies every rule whose hint part holds.
func (r *Redactor) part(st *state, line []byte) []byte {
	st.lower = toLower(st.lower, line)
	for _, ru := range rules {
		for _, h := range ru.hints {
			if bytes.Contains(st.lower, []byte(h)) {
				line = ru.apply(line)
				break
			}
		}
	}
	return line
}

func join(parts ...[]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// span is where a match lies in a piece of text.
type span struct{ start, end int }

// spans lists where in text (part of one unfinished line) a secret, or
// what announces one, lies: a cut of the line must not fall inside one.
func (r *Redactor) spans(st *state, text []byte) []span {
	var out []span
	if r != nil {
		for _, k := range r.known {
			for off := 0; ; {
				i := bytes.Index(text[off:], k)
				if i < 0 {
					break
				}
				out = append(out, span{off + i, off + i + len(k)})
				off += i + len(k)
			}
		}
	}
	st.lower = toLower(st.lower, text)
	for _, ru := range rules {
		for _, h := range ru.hints {
			if bytes.Contains(st.lower, []byte(h)) {
				for _, m := range ru.re.FindAllIndex(text, -1) {
					out = append(out, span{m[0], m[1]})
				}
				break
			}
		}
	}
	return out
}
