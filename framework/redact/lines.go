package redact

import (
	"bytes"
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
)

// Secrets that go on over the next lines (a YAML block scalar, a key's
// base64 wrapped, a quoted value not closed on its line, a flag's or an
// Authorization header's value on the next line): what a line leaves
// open (opens) and how the lines after it are masked (carried). A PEM
// key's lines are the segment's own business.

// nextKind says what the start of the next line is (state.next).
type nextKind uint8

const (
	nextNone nextKind = iota
	// nextFlag: the value of a secret flag that ended the line before: a
	// -J JSON's "args" array holds one element a line ("--auth-token",
	// then "X"), a shell command goes on after "--password \".
	nextFlag
	// nextCredential: an Authorization header's credential, its scheme
	// ending the line before ("Bearer \" in a shell's double quotes, a
	// header folded as RFC 9112 section 5.2 allows).
	nextCredential
	// nextSchemed: the same, the header's name alone on the line before:
	// the next line holds "scheme credential" or the credential.
	nextSchemed
	// nextBare: a Bearer or Basic without a header that ended the line.
	nextBare
	// nextEnvValue: the value of a secret-named env entry whose name
	// ended the line before ("- name: HF_TOKEN" in a pod spec, then
	// "  value: X"; "name": "HF_TOKEN", in kubectl's JSON).
	nextEnvValue
)

var (
	// yamlBlockKey is a key whose YAML block scalar follows: at the start
	// of a line (after a sequence's "- "), or inside a value (a variable
	// that holds the document, NAME='password: |).
	yamlBlockKey = regexp.MustCompile(`(?:^([ \t]*)(?:-[ \t]+)*|[\s'"=])(["']?)([A-Za-z0-9_-]+)["']?[ \t]*:[ \t]*[|>]` + blockHeader + `[ \t]*(?:#.*)?$`)
	// b64Begin is the first line of a private key's base64, wrapped: the
	// line ends where the base64 does, without padding.
	b64Begin = regexp.MustCompile(`LS0tLS1CRUdJTi[A-Za-z0-9+/]*$`)
	// authEnd is an Authorization header ending its line, with its scheme
	// or without; bareEnd a Bearer or Basic alone.
	authEnd = regexp.MustCompile(`(?i)\b` + authHeader + `([a-z][a-z0-9_.-]*)?[ \t]*\\?$`)
	bareEnd = regexp.MustCompile(`(?i)\b(?:bearer|basic)[ \t]*\\?$`)
	// nextValue is a flag's value at the start of a line.
	nextValue = regexp.MustCompile(`^[ \t]*(` + valueRE + `)`)
	// envValueLine is the value of the line after an env entry's name
	// ("value: X", "value": "X"), not a valueFrom (see envNameAtEnd).
	envValueLine = regexp.MustCompile(`^[ \t]*"?value"?[ \t]*:[ \t]*(` + valueRE + `)`)
	// ppkPrivate is the line of a PuTTY key file that says how many lines
	// of its private key follow.
	ppkPrivate = regexp.MustCompile(`^(?:.*[\s'"=])?Private-Lines:[ \t]*([0-9]{1,4})[ \t]*$`)
	// nextCred is a credential at the start of a line, after an optional
	// scheme and curl -v's "> ".
	nextCred = regexp.MustCompile(`^[ \t]*(?:> ?)?(?:([A-Za-z][A-Za-z0-9_.-]*)[ \t]+)?([A-Za-z0-9._~+/-]+=*)`)
)

// tailLen is how much of a line's end opens looks at: what it looks for
// is short, and a long line need not be searched whole.
const tailLen = 512

// opens sets what body, a whole line (or the last piece of one, when
// atStart is false) masked as out, leaves open for the lines after it.
// Each form is looked for only where the line's last characters allow
// it: most lines end in none.
func (st *state) opens(body, out []byte, atStart bool) {
	t := bytes.TrimRight(out[max(0, len(out)-tailLen):], " \t")
	if len(t) == 0 {
		return
	}
	last := t[len(t)-1]
	for _, q := range []byte{'\'', '"'} {
		if bytes.HasSuffix(out, []byte(string(q)+Mask)) {
			st.quote = q // a quoted secret value the line did not close
			return
		}
	}
	if atStart && bytes.ContainsAny(t, "|>") && (bytes.IndexByte(t, '#') >= 0 || blockIndicatorEnd(t)) {
		whole := len(t) == len(bytes.TrimRight(out, " \t"))
		if m := yamlBlockKey.FindSubmatchIndex(t); m != nil {
			name := t[m[6]:m[7]]
			if SecretName(string(name)) && !bareKey(name) {
				st.yaml, st.yamlIndent = true, 0
				// A key inside a value (NAME='password: |) starts a document
				// of its own: its lines are indented deeper than none.
				st.yamlMin = 0
				if m[2] >= 0 && whole {
					st.yamlMin = m[4] // the key's column
				}
				return
			}
		}
	}
	if flag := endingFlag(t); flag != nil && secretFlagName(flag) {
		st.next = nextFlag
		return
	}
	if name := envNameAtEnd(t); name != nil && SecretName(string(name)) {
		st.next = nextEnvValue
		return
	}
	if bytes.Contains(t, []byte("Private-Lines")) {
		if m := ppkPrivate.FindSubmatchIndex(t); m != nil {
			st.ppk, _ = strconv.Atoi(string(t[m[2]:m[3]])) // 1-4 digits: ppkPrivate
			return
		}
	}
	if last == '\\' || isBase64(last) {
		if hasFold(t, "authorization") {
			if m := authEnd.FindSubmatchIndex(t); m != nil {
				st.next = nextSchemed
				if m[2] >= 0 {
					st.next = nextCredential
				}
				return
			}
		}
		if (hasFold(t, "bearer") || hasFold(t, "basic")) && bareEnd.Match(t) {
			st.next = nextBare
			return
		}
	}
	if b := bytes.TrimRight(body, " \t"); len(b) > 0 && isBase64(b[len(b)-1]) && bytes.Contains(b, []byte("LS0tLS1CRUdJTi")) {
		if loc := b64Begin.FindIndex(b); loc != nil && (loc[1]-loc[0])%4 == 0 {
			if dec, err := base64.StdEncoding.DecodeString(string(b[loc[0]:loc[1]])); err == nil &&
				bytes.Contains(dec, []byte("PRIVATE KEY")) && !bytes.Contains(dec, []byte("-----END")) {
				st.b64, st.b64Width = true, loc[1]-loc[0]
			}
		}
	}
}

// envNameAtEnd is the name of an env entry that t, the end of a line,
// ends with, as YAML ("- name: X") and JSON ("name": "X",) print it; nil
// when t ends otherwise. It reads t backwards, by hand: most lines end in
// no name, and a JSON file has many a "name".
func envNameAtEnd(t []byte) []byte {
	i := len(t)
	if i > 0 && t[i-1] == ',' {
		i--
	}
	if i > 0 && (t[i-1] == '"' || t[i-1] == '\'') {
		i--
	}
	end := i
	for i > 0 && (nameChar(t[i-1]) && t[i-1] != ':') {
		i--
	}
	name := t[i:end]
	if len(name) == 0 {
		return nil
	}
	if i > 0 && (t[i-1] == '"' || t[i-1] == '\'') {
		i--
	}
	for i > 0 && (t[i-1] == ' ' || t[i-1] == '\t') {
		i--
	}
	if i == 0 || t[i-1] != ':' {
		return nil
	}
	i--
	for i > 0 && (t[i-1] == ' ' || t[i-1] == '\t') {
		i--
	}
	if i > 0 && t[i-1] == '"' {
		i--
	}
	if i < 4 || string(t[i-4:i]) != "name" {
		return nil
	}
	i -= 4
	if i > 0 && t[i-1] == '"' {
		i--
	}
	if i > 0 && !(t[i-1] == ' ' || t[i-1] == '\t' || t[i-1] == '{' || t[i-1] == ',' || t[i-1] == '\'' || t[i-1] == '"') {
		return nil
	}
	return name
}

// blockIndicatorEnd: t ends as a key whose block scalar follows does
// ("key: |", "key: >-", "key: |2+"), comment aside: the quick test before
// yamlBlockKey, which many a line ending in a digit would meet otherwise.
func blockIndicatorEnd(t []byte) bool {
	k := len(t)
	for n := 0; n < 2 && k > 0 && strings.IndexByte("123456789+-", t[k-1]) >= 0; n++ {
		k--
	}
	if k == 0 || t[k-1] != '|' && t[k-1] != '>' {
		return false
	}
	k--
	for k > 0 && (t[k-1] == ' ' || t[k-1] == '\t') {
		k--
	}
	return k > 0 && t[k-1] == ':'
}

// endingFlag is the flag that t, the end of a line or a JSON element,
// ends with: a JSON array's element ("--auth-token", or escaped) or a word
// before a line continuation (--password \); nil when there is none.
func endingFlag(t []byte) []byte {
	var w []byte
	switch {
	case bytes.HasSuffix(t, []byte(`",`)):
		w = bytes.TrimSuffix(t[:len(t)-2], []byte(`\`)) // \"--auth-token\", in a JSON string
		if i := bytes.LastIndexByte(w, '"'); i >= 0 {
			w = w[i+1:]
		} else {
			return nil
		}
	case bytes.HasSuffix(t, []byte(`\`)):
		w = bytes.TrimRight(t[:len(t)-1], " \t")
		if len(w) == len(t)-1 {
			return nil // a backslash inside a word
		}
		if i := bytes.LastIndexAny(w, " \t\"'="); i >= 0 {
			w = w[i+1:]
		}
	default:
		return nil
	}
	if len(w) < 2 || w[0] != '-' {
		return nil
	}
	for _, c := range w {
		if !(c == '-' || isBase64(c) && c != '+' && c != '/') {
			return nil
		}
	}
	return w
}

// hasFold reports whether b holds the lower-case w, in any case.
func hasFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		if lowerOf[b[i]] == w[0] && foldedPrefix(b[i:], []byte(w)) {
			return true
		}
	}
	return false
}

// carried masks body, the start of a line, by what the lines before left
// open. whole says that out is the whole line masked (a line of a YAML
// block or of a key's base64); otherwise out, when not nil, is body with
// its start masked, for the rules to go on with.
func (st *state) carried(body []byte) (out []byte, whole bool) {
	if st.yaml {
		t := bytes.TrimLeft(body, " ")
		n := len(body) - len(t)
		if len(bytes.TrimSpace(t)) == 0 {
			return body, true // a blank line inside the block
		}
		if (st.yamlIndent == 0 && n > st.yamlMin) || (st.yamlIndent > 0 && n >= st.yamlIndent) {
			if st.yamlIndent == 0 {
				st.yamlIndent = n
			}
			return maskedBody(body), true
		}
		st.yaml = false
	}
	if st.b64 {
		if out, ok := st.b64Line(body); ok {
			return out, true
		}
		st.b64 = false
	}
	if st.ppk > 0 {
		// A line of a PuTTY key's private part: base64 alone on it.
		t := bytes.TrimSpace(body)
		n := 0
		for n < len(t) && (isBase64(t[n]) || t[n] == '=') {
			n++
		}
		if n > 0 && n == len(t) {
			st.ppk--
			return maskedBody(body), true
		}
		st.ppk = 0
	}
	if st.quote != 0 {
		i := closingQuote(body, st.quote)
		part := body
		if i >= 0 {
			st.quote = 0
			part = body[:i]
		}
		// A key's END line stays, as the key's own masking leaves it (the
		// value was a key: NAME='-----BEGIN ... masked once more).
		if t := bytes.TrimSpace(part); len(t) == 0 || isMasked(t) || bytes.Equal(t, pemEnd.Find(t)) {
			return nil, false
		}
		if i < 0 {
			return maskedBody(body), true
		}
		return join([]byte(Mask), body[i:]), false
	}
	next := st.next
	st.next = nextNone
	switch next {
	case nextFlag:
		return flagValue(body), false
	case nextEnvValue:
		m := envValueLine.FindSubmatchIndex(body)
		if m == nil {
			return nil, false
		}
		m[0] = m[2]
		if rep := wordValue(1, "")(body, m); rep != nil {
			return join(body[:m[0]], rep, body[m[1]:]), false
		}
	case nextCredential, nextSchemed, nextBare:
		m := nextCred.FindSubmatchIndex(body)
		if m == nil {
			return nil, false
		}
		s, e := m[4], m[5]
		if m[2] >= 0 && !(next == nextSchemed && authScheme.Match(body[m[2]:m[3]])) {
			// Two words, the first no scheme: the first is the credential.
			s, e = m[2], m[3]
		}
		if v := body[s:e]; len(v) >= 8 && (len(v) >= 20 || bytes.ContainsAny(v, "0123456789+/=")) && !isMasked(v) {
			return join(body[:s], []byte(Mask), body[e:]), false
		}
	}
	return nil, false
}

// flagValue is b with the value that starts it masked: what follows a
// secret flag that ended the line or JSON element before; nil when b
// starts with no value (another flag, nothing).
func flagValue(b []byte) []byte {
	m := nextValue.FindSubmatchIndex(b)
	if m == nil || flagNext(b[m[2]:m[3]]) {
		return nil
	}
	m[0] = m[2] // keep the indentation out of the mask's reach
	if rep := wordValue(1, "")(b, m); rep != nil {
		return join(b[:m[0]], rep, b[m[1]:])
	}
	return nil
}

// b64Line masks a line of a private key's base64 wrapped over lines (its
// first line seen): base64 alone on the line, at most as long as the
// first, that decodes to the text of a PEM key. A shorter line, padding
// or the key's END line ends it.
func (st *state) b64Line(body []byte) ([]byte, bool) {
	t := bytes.TrimLeft(body, " \t")
	n := 0
	for n < len(t) && isBase64(t[n]) {
		n++
	}
	p := n
	for p < len(t) && p < n+2 && t[p] == '=' {
		p++
	}
	if n == 0 || p%4 != 0 || p > st.b64Width || len(bytes.Trim(t[p:], "'\", \t")) > 0 {
		return nil, false
	}
	dec, err := base64.StdEncoding.DecodeString(string(t[:p]))
	if err != nil || !pemText(dec) {
		return nil, false
	}
	if p < st.b64Width || bytes.Contains(dec, []byte("-----END")) {
		st.b64 = false
	}
	return join(body[:len(body)-len(t)], []byte(Mask), t[p:]), true
}

func isBase64(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/'
}

// pemText: b is text a PEM key is made of: base64, dashes, labels and
// headers (Proc-Type: 4,ENCRYPTED), line breaks.
func pemText(b []byte) bool {
	for _, c := range b {
		if !isBase64(c) && strings.IndexByte("=-: ,\r\n", c) < 0 {
			return false
		}
	}
	return true
}

// closingQuote is the index in b of the quote q that closes a value, one
// a backslash does not escape when q is '"'; -1 when b has none.
func closingQuote(b []byte, q byte) int {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			if q == '"' {
				i++
			}
		case q:
			return i
		}
	}
	return -1
}
