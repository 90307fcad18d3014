package redact

import (
	"bytes"
	"encoding/base64"
	"html"
	"regexp"
	"strconv"
	"strings"
)

// valueRE is a value after "=" or ":": an escaped-quoted string inside a
// JSON string (\"...\"), a quoted one, or a word (wordRE). A quote that
// is not closed runs to the end: the rest of the line, or of a piece of a
// line cut short. A closed one goes on with what follows it, up to a
// blank, when that cannot follow a closing quote in JSON (a shell's
// 'a'\”b', as launchers and bash's trace quote a value holding a single
// quote). No match ends inside a JSON escape, so a masked JSON stays
// valid.
const valueRE = `(?:\\"(?:[^"\\\n]|\\[^"\n])*(?:\\"|$)` +
	`|"(?:[^"\\\n]|\\.)*(?:"|$)` +
	`|'[^'\n]*(?:'|$)` +
	`)(?:(?:` + afterQuote + `)(?:` + wordUnit + `)*)*` +
	`|` + wordRE

// The grammar of an unquoted value. It runs to a blank, through closing
// brackets (a]b, a}b: masks trim the ones that close the structure the
// value stands in, see trimClosers) and through a quote that something
// follows which cannot follow a closing quote in JSON or a shell (ab"cd,
// and bash's trace of a value holding a single quote); it stops at a
// quote after an opener or a comma (a JSON string's opening quote:
// {"token":1,"n":2}) and at a trailing comma. Inside it a quote is a
// character: a blank ends the value even between quotes.
const (
	// wordPlain: a character after which a quote may go on with the value.
	wordPlain = `[^\s"'\\,{\[:]`
	// wordOpen: one after which a quote opens a string.
	wordOpen = `[{\[:]`
	// wordEsc: a backslash escape (\/ in nccl-tests' JSON), not of a quote.
	wordEsc = `\\[^"\s]`
	// innerQuoted: a quoted string after a closed one, closed on the line,
	// its opening quote followed by what cannot follow a closing one.
	innerQuoted = `'[^\s,:;}\])'][^'\n]*'` +
		`|"[^\s,:;}\])"\\](?:[^"\\\n]|\\.)*"` +
		`|\\"[^\s,:;}\])"\\](?:[^"\\\n]|\\[^"\n])*\\"`
	// wordQuote: quotes followed by what cannot follow a closing one, the
	// string not closed on the line.
	wordQuote = `(?:\\"|["'])+[^\s,:;}\])"']`
	wordHead  = `(?:` + wordPlain + `|` + wordEsc + `)(?:` + wordQuote + `)*`
	wordUnit  = wordHead + `|` + wordOpen
	wordRE    = `(?:` + wordUnit + `)+(?:,(?:` + wordHead + `)(?:` + wordUnit + `)*)*`
	// afterQuote: what goes on with a value after its closing quote:
	// another quoted string, a shell's \' (also JSON-escaped; not a JSON
	// escape: \n, \/, ...), or a word that starts with no closer.
	afterQuote = innerQuoted + `|\\[^"\snrtu/\\]|\\\\'|[^\s"'\\,{\[:;}\])](?:` + innerQuoted + `|` + wordQuote + `)*`
)

// wordRest is the length of the rest of a word cut short that b starts
// with: what a piece of a line that follows a cut through a masked word
// begins with (state.skip). It follows wordRE's grammar, by hand: a
// regular expression over a piece of a megabyte is slow.
func wordRest(b []byte) int {
	i, prev := 0, byte(0)
	for i < len(b) {
		c := b[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			return i
		case c == '"' || c == '\'' || c == '\\' && i+1 < len(b) && b[i+1] == '"':
			// Quotes go on with the word after a plain character or an
			// escape, when what follows them cannot follow a closing one.
			j := i
			for j < len(b) && (b[j] == '"' || b[j] == '\'' || b[j] == '\\' && j+1 < len(b) && b[j+1] == '"') {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if strings.IndexByte("{[:,", prev) >= 0 || j >= len(b) || strings.IndexByte(" \t\n\r\v\f,:;}])\"'", b[j]) >= 0 {
				return i
			}
			i, prev = j+1, 'a' // more quotes may follow what followed them
		case c == '\\':
			if i+1 >= len(b) || strings.IndexByte(" \t\n\r\v\f\"", b[i+1]) >= 0 {
				return i
			}
			i, prev = i+2, 'a' // an escape: quotes may follow it
		case c == ',':
			// A comma goes on with the word before a plain character or an
			// escape.
			if i+1 >= len(b) || strings.IndexByte(" \t\n\r\v\f\"',{[:", b[i+1]) >= 0 ||
				b[i+1] == '\\' && (i+2 >= len(b) || strings.IndexByte(" \t\n\r\v\f\"", b[i+2]) >= 0) {
				return i
			}
			i, prev = i+1, c
		default:
			i, prev = i+1, c
		}
	}
	return i
}

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
	// reach is how far past its regular expression's match the rule's
	// mask may go (a cookie list, a URL's password, a key's lines): a
	// Writer's cut of a long line keeps out of that much after a match.
	reach int
	// needs, when set, must be in the line too (case and all) for the
	// rule to run: a second hint, common alone.
	needs []byte
	// hintBits are the hints' bits in allHints.
	hintBits uint64
	// named: a match starts with a name (a flag's, a variable's, an
	// element's) that holds the hint, at most two characters after the
	// match's start.
	named bool
}

// nameChar: c may be part of a name that holds a hint (HF_TOKEN,
// --auth-token, ns:password, u003cpassword after a JSON escape's "\").
func nameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':'
}

// placeholder is a value of usage text (KEY=VALUE), not of a secret.
var placeholder = regexp.MustCompile(`^[A-Z]+(?:_[A-Z]+)*[).:;]*$`)

// secretFlag matches the words of a flag name that takes a secret.
var secretFlag = regexp.MustCompile(`(?i)token|password|passwd|passphrase|secret|api-?key|auth|credential|jwt`)

// nameHints are fragments every secret name holds, lower-cased.
var nameHints = []string{"token", "secret", "pass", "key", "auth", "credential", "cookie", "jwt", "webhook", "pwd", "signature", "psk",
	"_pat", "pat_", "-pat", "pat-", "_pw", "pw_", "-pw", "pw-",
	// Components only a name's last one (secretNameRE).
	"_creds", "-creds", "_psw", "-psw", "_salt", "-salt", "_otp", "-otp", "_pin", "-pin"}

var urlHints = []string{"://", `:\/\/`}

// authHeader is an Authorization header's name and separator, as a log,
// a JSON string or an env entry writes it (the authorization rule, and
// authEnd for a credential on the next line).
const authHeader = `(?:proxy-)?authorization\\?"?[ \t]*[:=][ \t]*\\?"?[ \t]*`

// rules run in this order, each on what the ones before left.
var rules = []*rule{
	// A PEM private key on one line: a JSON string, an env entry.
	{name: "pem", hints: []string{"private key"},
		re:   regexp.MustCompile(`(-----BEGIN ` + pemLabel + `-----)(.*?)(-----END ` + pemLabel + `-----)`),
		mask: group(2)},
	// The base64 of a PEM private key (kubeconfig client-key-data, a
	// Kubernetes Secret's data): "LS0tLS1CRUdJTi" is "-----BEGIN". In a
	// JSON string, wrapped (base64's 76 columns, openssl's 64), its lines
	// are joined by escaped line breaks (escaped twice in a JSON string
	// that holds a JSON); wrapped in a log, carried masks the lines after
	// the first.
	{name: "pem-base64", hints: []string{"ls0tls1crudjt"},
		re: regexp.MustCompile(`LS0tLS1CRUdJTi(?:[A-Za-z0-9+]|\\*/|(?:\\+r)?\\+n(?:[A-Za-z0-9+]|\\*/))*={0,2}`),
		mask: func(line []byte, m []int) []byte {
			b64 := escapedBreak.ReplaceAll(line[m[0]:m[1]], nil)
			b64 = bytes.ReplaceAll(b64, []byte(`\`), nil)
			b64 = bytes.TrimRight(b64, "=")
			dec, _ := base64.RawStdEncoding.DecodeString(string(b64[:len(b64)/4*4]))
			if bytes.Contains(dec, []byte("PRIVATE KEY")) {
				return []byte(Mask)
			}
			return nil
		}},
	// Tokens by their documented prefixes and shapes (see
	// testdata/secrets.yaml for where each is documented).
	{name: "token-formats", hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "xapp-", "hf_", "akia", "asia", "glpat-", "npm_", "aiza", "eyj",
		"sk-", "k_live_", "k_test_", "ya29.", "nvapi-", "pypi-age", "dckr_", "hvs.", "hvb.", "hvr."},
		re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255}|xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}` +
			`|hf_[A-Za-z0-9]{30,}|(?:AKIA|ASIA)[A-Z0-9]{16}\b|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|AIza[0-9A-Za-z_-]{35}` +
			`|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*` +
			// OpenAI (project, service account, admin; a legacy key is sk-
			// and 48 characters), Anthropic, Stripe's secret and restricted
			// keys, Google OAuth access tokens, NVIDIA's nvapi- keys, PyPI
			// tokens (a macaroon: "AgE" opens it), Docker Hub's personal and
			// organisation tokens, Vault's service, batch and recovery tokens.
			`|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|sk-ant-[a-z]+[0-9]{2}-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{48}\b` +
			`|[rs]k_(?:live|test)_[A-Za-z0-9]{20,}|ya29\.[0-9A-Za-z_-]{20,}|nvapi-[A-Za-z0-9_-]{20,}|pypi-AgE[A-Za-z0-9_-]{40,}` +
			`|dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}|hv[sbr]\.[A-Za-z0-9_-]{20,})`),
		mask: group(0)},
	// A token by its shape written as base64 or hex (a blob in a config,
	// a dump): found by the encodings of its prefix, masked when the run
	// decodes to a token (encodedToken, set in init).
	{name: "encoded-token", hints: encodedTokenHints, re: regexp.MustCompile(`[A-Za-z0-9+/_-]{24,}={0,2}`)},
	// The base64 of a JSON or YAML document that holds a secret: a
	// Kubernetes Secret's .dockerconfigjson and .dockercfg ("eyJ" is
	// base64 of `{"`), a kubeconfig ("YXBpVmVyc2lvbj" of "apiVersion").
	// It is decoded and masked whole when masking the text changes it.
	{name: "base64-document", hints: []string{"eyj", "yxbpvmvyc2lvbj"},
		re: regexp.MustCompile(`(?:eyJ|YXBpVmVyc2lvbj)(?:[A-Za-z0-9+_-]|\\?/){16,}={0,2}`),
		mask: func(line []byte, m []int) []byte {
			b64 := bytes.ReplaceAll(line[m[0]:m[1]], []byte(`\`), nil)
			b64 = bytes.TrimRight(b64, "=")
			b64 = b64[:len(b64)/4*4]
			enc := base64.RawStdEncoding
			if bytes.ContainsAny(b64, "-_") {
				enc = base64.RawURLEncoding
			}
			dec, err := enc.DecodeString(string(b64))
			if err != nil || !documentHoldsSecret(dec) {
				return nil
			}
			return []byte(Mask)
		}},
	{name: "slack-webhook", hints: []string{"hooks.slack.com"},
		re:   regexp.MustCompile(`(hooks\.slack\.com(?:\\?/)services(?:\\?/))((?:[A-Za-z0-9_-]|\\?/)+)`),
		mask: group(2)},
	{name: "discord-webhook", hints: []string{"discord"},
		re:   regexp.MustCompile(`(discord(?:app)?\.com(?:\\?/)api(?:\\?/)(?:v[0-9]+(?:\\?/))?webhooks(?:\\?/)[0-9]+(?:\\?/))([A-Za-z0-9_-]+)`),
		mask: group(2)},
	// Signed URLs' query parameters and AWS Signature Version 4's
	// Authorization header: the signature, a session's token, and of a
	// credential its key ID (the part before its first "/", or "%2F";
	// the date, region and service after it stay). CloudFront's
	// Key-Pair-Id names a public key and stays.
	{name: "signed-url", hints: []string{"signature=", "credential=", "security-token="},
		re: regexp.MustCompile(`(?i)(?:^|[^A-Za-z0-9_-]|\\u0026)((?:x-(?:amz|goog)-)?(signature|credential|security-token)=)((?:[A-Za-z0-9%+=._~-]|\\?/)+)`),
		mask: func(line []byte, m []int) []byte {
			if bytes.EqualFold(line[m[4]:m[5]], []byte("credential")) {
				v := line[m[6]:m[7]]
				end := len(v)
				for _, sep := range []string{"/", `\/`, "%2F", "%2f"} {
					if i := bytes.Index(v, []byte(sep)); i >= 0 && i < end {
						end = i
					}
				}
				m[7] = m[6] + end
				m[1] = m[7]
			}
			if m[6] == m[7] {
				return nil
			}
			return group(3)(line, m)
		}},
	// Azure SAS: the signature of a URL's query (& escaped as JSON and
	// HTML do).
	{name: "sas-signature", hints: []string{"sig="},
		re:   regexp.MustCompile(`((?:[?&;]|\\u0026|&amp;|&#38;)sig=)((?:[A-Za-z0-9%+=._~-]|\\?/)+)`),
		mask: group(2)},
	// scheme://user:password@host, the user empty or not (redis://:pw@h).
	// The password runs to the last "@" before the first "/"; with no "@"
	// there, text after "user:" that is no port (digits) is a password
	// holding a "/", typed unencoded, that runs to the next "@".
	{name: "url-password", hints: urlHints, reach: 1 << 10,
		re: regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*:(?:\\?/){2}([^/\s:@\\"'<>\[]*):`),
		mask: func(line []byte, m []int) []byte {
			end := urlPasswordEnd(line, m[1])
			if end <= m[1] {
				return nil
			}
			if isMasked(line[m[1]:end]) {
				return nil
			}
			out := append([]byte{}, line[m[0]:m[1]]...)
			m[1] = end
			return append(out, Mask...)
		}},
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
	// htpasswd -b takes the password as its last argument: FILE USER
	// PASSWORD, or USER PASSWORD with -n (httpd's htpasswd(1)).
	{name: "htpasswd", hints: []string{"htpasswd"},
		re: regexp.MustCompile(`\bhtpasswd((?:[ \t]+-[A-Za-z]+)+)[ \t]+((?:[^\s'"\\]|\\/)+)[ \t]+((?:[^\s'"\\]|\\/)+)(?:[ \t]+('[^']*(?:'|$)|"[^"]*(?:"|$)|[^\s'"\\]+))?`),
		mask: func(line []byte, m []int) []byte {
			flags := string(line[m[2]:m[3]])
			if !strings.Contains(flags, "b") {
				return nil
			}
			pw := 4
			if strings.Contains(flags, "n") {
				pw = 3
			}
			s, e := m[2*pw], m[2*pw+1]
			if s < 0 || isMasked(line[s:e]) {
				return nil
			}
			m[1] = e
			return append(append([]byte{}, line[m[0]:s]...), maskValue(line[s:e])...)
		}},
	// echo PASSWORD | docker login --password-stdin (docker login(1)): the
	// echo's word is the password.
	{name: "password-stdin", hints: []string{"password-stdin"},
		re: regexp.MustCompile(`\b(?:echo|printf)((?:[ \t]+-[neE]+|[ \t]+'%s\\?n?'|[ \t]+"%s\\?n?")*)[ \t]+('[^']*'|"[^"]*"|\\"[^"\\]*\\"|[^\s'"|\\]+)[ \t]*\|[ \t]*(?:sudo[ \t]+)?(?:docker|podman|nerdctl|helm[ \t]+registry)[ \t]+login\b[^|;&\n]*--password-stdin`),
		mask: func(line []byte, m []int) []byte {
			if bytes.HasPrefix(bytes.TrimLeft(line[m[4]:m[5]], `"'\`), []byte("$")) {
				return nil // echo $TOKEN: a variable's name, no secret
			}
			return group(2)(line, m)
		}},
	// NAME value with a blank, no "=": a Dockerfile's ENV and ARG in their
	// space-separated form (as docker build prints the step), csh's setenv.
	{name: "env-space", hints: []string{"env ", "arg "},
		re: regexp.MustCompile(`(?:^|[\s;&|('"=])(?:ENV|ARG|setenv)[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]+('[^']*(?:'|$)|"[^"]*(?:"|$)|[^\s'"\\]+)`),
		mask: func(line []byte, m []int) []byte {
			if !SecretName(string(line[m[2]:m[3]])) {
				return nil
			}
			return group(2)(line, m)
		}},
	// zip -P PASSWORD and unzip -P PASSWORD (zip(1), unzip(1)); elsewhere
	// -P is often a port (mysql, ssh's -P in scp).
	{name: "zip-password", hints: []string{"zip"},
		re:   regexp.MustCompile(`\b(?:un)?zip\b((?:[ \t]+-[a-zA-OQ-Z][^ \t]*)*)([ \t]+-P[ \t]*)('[^']*(?:'|$)|"[^"]*(?:"|$)|[^\s'"\\]+)`),
		mask: group(3)},
	// curl -u user:password (and --user, --proxy-user); a uid:gid is no
	// password.
	{name: "user-option", hints: []string{"-u", "--user", "--proxy-user"},
		re: regexp.MustCompile(`(?:^|[\s"'])(?:-u|--user|--proxy-user)(?:[ \t]+|=)['"]?([^\s:'"@/\\]+):([^\s'"\\]+)`),
		mask: func(line []byte, m []int) []byte {
			if allDigits(line[m[2]:m[3]]) && allDigits(line[m[4]:m[5]]) || bytes.HasPrefix(line[m[4]:m[5]], []byte("//")) {
				return nil // a uid:gid; a URL (redis-cli -u redis://...), the URL rules' own
			}
			return group(2)(line, m)
		}},
	// Authorization headers of any scheme (Bearer, Basic, Token, ...): the
	// scheme stays. In a JSON string the credential may follow the scheme
	// after an escaped line break or backslash (a "Bearer \" continued);
	// a scheme that ends its line is left for the next line (carried).
	{name: "authorization", hints: []string{"authorization"},
		re: regexp.MustCompile(`(?i)\b(` + authHeader + `)(?:([a-z][a-z0-9_.-]*)((?:[ \t]|\\+[nr]|\\\\)+))?([^\s"'\\,;]+)`),
		mask: func(line []byte, m []int) []byte {
			if m[4] < 0 && authScheme.Match(line[m[8]:m[9]]) && restBlank.Match(line[m[9]:]) {
				return nil // the scheme, its credential on the next line
			}
			if m[4] >= 0 && bytes.EqualFold(line[m[4]:m[5]], []byte("aws4-hmac-sha256")) {
				return nil // Credential=, Signature=: signed-url masks their secret parts
			}
			return group(4)(line, m)
		}},
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
	// --password value, --auth-token=value, -token value, and a JSON
	// array's "--auth-token", "value" (-J's "args" on one line); a flag
	// that ends its line takes the next one's value (see carried);
	// --token-file names a file.
	{name: "flag", named: true, hints: nameHints, retry: 3,
		re: regexp.MustCompile(`(?:^|[\s"'=])(--?[A-Za-z0-9][A-Za-z0-9-]*)(=|[ \t]+|\\?"[ \t]*,[ \t]*)(` + valueRE + `)`),
		mask: func(line []byte, m []int) []byte {
			if !secretFlagName(line[m[2]:m[3]]) || flagNext(line[m[6]:m[7]]) {
				return nil // another flag; a reference; or the next flag, not a value
			}
			return wordValue(3, "")(line, m)
		}},
	// Open MPI's --mca NAME VALUE (-mca, --gmca): the parameter's name says
	// whether its value is secret.
	{name: "mca", named: true, hints: []string{"mca"},
		re: regexp.MustCompile(`(?:^|[\s"'=])--?g?mca[ \t]+([A-Za-z0-9_]+)[ \t]+(` + valueRE + `)`),
		mask: func(line []byte, m []int) []byte {
			if !SecretName(string(line[m[2]:m[3]])) || flagNext(line[m[4]:m[5]]) {
				return nil
			}
			return wordValue(2, "")(line, m)
		}},
	// Clients that take a password after a flag of their own: docker (and
	// podman, nerdctl, buildah, skopeo, oras, helm registry) login -p and
	// az login -p, glued (-pX) or not; ipmitool's -P (and its Kg key, -k,
	// -y), other tools' -P being no password (xargs -P 8); Samba's
	// -U user%password; the OpenLDAP clients' -w; redis-cli's -a and
	// --pass (its -p is a port).
	{name: "login-p", hints: []string{"login"},
		re: regexp.MustCompile(`\b(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]+registry|az)(?:[ \t]+[^\s;|&]+)*?[ \t]+login\b` +
			`(?:[ \t]+[^\s;|&]+)*?[ \t]+(?:-p|--password)(?:[ \t]+|=)?(` + toolValue + `)`),
		mask: toolMask},
	{name: "ipmitool", hints: []string{"ipmitool"},
		re:   regexp.MustCompile(`\bipmitool\b(?:[ \t]+[^\s;|&]+)*?[ \t]+-[Pky][ \t]*(` + toolValue + `)`),
		mask: toolMask},
	{name: "samba-user", hints: []string{"smb", "rpcclient"},
		re:   regexp.MustCompile(`\b(?:smbclient|rpcclient|smbcacls|smbcquotas|smbget|smbtree|smbspool)\b(?:[ \t]+[^\s;|&]+)*?[ \t]+(?:-U|--user)(?:[ \t]+|=)?['"]?[^\s%'"\\]+%(` + toolValue + `)`),
		mask: toolMask},
	{name: "ldap-w", hints: []string{"ldap"},
		re:   regexp.MustCompile(`\bldap(?:search|modify|add|delete|whoami|passwd|compare|modrdn|exop|url)\b(?:[ \t]+[^\s;|&]+)*?[ \t]+-w[ \t]*(` + toolValue + `)`),
		mask: toolMask},
	{name: "redis-cli", hints: []string{"redis-cli"},
		re:   regexp.MustCompile(`\bredis-cli\b(?:[ \t]+[^\s;|&]+)*?[ \t]+(?:-a|--pass)(?:[ \t]+|=)(` + toolValue + `)`),
		mask: toolMask},
	// openssl's pass phrase arguments: pass:PASSWORD is the password
	// itself; env:, file:, fd: and stdin say where it is.
	{name: "openssl-pass", hints: []string{"-pass"},
		re:   regexp.MustCompile(`(?:^|[\s"'])-pass(?:in|out)?[ \t]+['"]?pass:(` + toolValue + `)`),
		mask: toolMask},
	// The MySQL and MariaDB clients take the password glued to -p
	// (-pSECRET); -p alone prompts, and other tools' -p is a port or a
	// path.
	{name: "mysql-p", hints: []string{"mysql", "mariadb"},
		re: regexp.MustCompile(`\b(?:mysql(?:dump|admin|import|show|check|slap|pump)?|mariadb(?:-(?:dump|admin|import|show|check|slap))?)` +
			`(?:[ \t]+[^\s;|&]+)*?[ \t]+-p('[^']*(?:'|$)|"[^"]*(?:"|$)|[^\s'"]\S*)`),
		mask: group(1)},
	// ~/.aws/credentials' keys given a value after a blank (aws configure
	// set aws_secret_access_key VALUE); "key = value" is an assignment.
	{name: "aws-config", hints: []string{"aws_se"},
		re: regexp.MustCompile(`(?i)\baws_(?:secret_access_key|session_token|security_token)([ \t]+)(` + valueRE + `)`),
		mask: func(line []byte, m []int) []byte {
			if v := line[m[4]:m[5]]; v[0] == '=' || v[0] == ':' {
				return nil
			}
			return wordValue(2, "")(line, m)
		}},
	// .netrc (and curl's, ftp's): "machine HOST login USER password
	// SECRET", or its tokens one a line ("password SECRET" alone).
	{name: "netrc", hints: []string{"password", "account"},
		re: regexp.MustCompile(`(?:^[ \t]*password[ \t]+("[^"]*"|[^\s"\\]+)[ \t]*$|\b(?:machine[ \t]+\S+|default|login[ \t]+\S+)(?:(?:[ \t]|\\n)+\S+)*?(?:[ \t]|\\n)+(?:password|account)[ \t]+("[^"]*"|[^\s"\\]+))`),
		mask: func(line []byte, m []int) []byte {
			if m[2] >= 0 {
				return group(1)(line, m)
			}
			return group(2)(line, m)
		}},
	// An XML element named as a secret (Maven's settings.xml
	// <password>, <token>, ...), also JSON- or HTML-escaped; a bare <key>
	// is a plist's.
	{name: "xml-element", named: true, hints: nameHints,
		re: regexp.MustCompile(`(?:<|\\u003[cC]|&lt;)((?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w-]*))(?:[ \t][^<>]*?)?(?:>|\\u003[eE]|&gt;)(.*?)(?:<|\\u003[cC]|&lt;)\\?/((?:[A-Za-z_][\w.-]*:)?[A-Za-z_][\w-]*)(?:>|\\u003[eE]|&gt;)`),
		mask: func(line []byte, m []int) []byte {
			name := line[m[4]:m[5]]
			if !bytes.Equal(line[m[2]:m[3]], line[m[8]:m[9]]) || !SecretName(string(name)) || bareKey(name) || m[6] == m[7] {
				return nil
			}
			return group(3)(line, m)
		}},
	// "NAME=value" as a JSON string (nccl-tests' -J env array): the value
	// runs to the closing quote, blanks included; escaped (\"NAME=value\"
	// in a JSON string holding a JSON) to the escaped closing quote.
	{name: "json-entry", named: true, hints: nameHints, retry: 2,
		re: regexp.MustCompile(`"([A-Za-z0-9_-]+)=((?:[^"\\]|\\.)*)(?:"|$)`),
		mask: func(line []byte, m []int) []byte {
			if !SecretName(string(line[m[2]:m[3]])) {
				return nil
			}
			if m[0] > 0 && line[m[0]-1] == '\\' {
				m[5] = escapedEnd(line, m[4])
				m[1] = m[5]
			}
			return group(2)(line, m)
		}},
	// Cookie and Set-Cookie headers: every cookie's value (RFC 6265
	// section 5.4: "name=value; name=value"); of Set-Cookie the first
	// pair only, its attributes (Path=/, HttpOnly) being no secret.
	{name: "cookie", hints: []string{"cookie"}, reach: 4 << 10,
		re:   regexp.MustCompile(`(?i)\b((?:set-)?cookie)\\?"?[ \t]*:[ \t]*(?:\\?")?[ \t]*`),
		mask: cookieMask},
	// A name and its value as members of one object: a container's env
	// in a pod spec ({"name":"HF_TOKEN","value":"X"}, in either order),
	// or as YAML held in a JSON string ("- name: HF_TOKEN\n  value: X").
	// On lines of their own, carried masks the value's line.
	// Only a line that holds "value" and a secret's name (whose hints it
	// holds) is looked at: gpuaccept's results hold many a
	// {"name":"busbw","value":...}. Each regular expression starts with a
	// word, which the search skips to.
	{name: "name-value", hints: nameHints, needs: []byte("value"),
		re: regexp.MustCompile(`name\\?"?[ \t]*:[ \t]*\\?["']?([A-Za-z0-9_.-]+)\\?["']?[ \t]*(?:,[ \t]*|(?:\\+[nr])+[ \t]*(?:-[ \t]+)?)\\?"?value\\?"?[ \t]*:[ \t]*(` + valueRE + `)`),
		mask: func(line []byte, m []int) []byte {
			if m[0] > 0 && nameChar(line[m[0]-1]) || !SecretName(string(line[m[2]:m[3]])) {
				return nil
			}
			// A word in a JSON string ends at an escaped line break.
			if v := line[m[4]:m[5]]; !quotedValue(v) {
				if loc := escapedBreak.FindIndex(v); loc != nil {
					m[5] = m[4] + loc[0]
					m[1] = m[5]
				}
			}
			return wordValue(2, "")(line, m)
		}},
	{name: "value-name", hints: nameHints, needs: []byte("value"),
		re: regexp.MustCompile(`value\\?"[ \t]*:[ \t]*(\\?"(?:[^"\\]|\\[^"])*\\?")[ \t]*,[ \t]*\\?"name\\?"[ \t]*:[ \t]*\\?"([A-Za-z0-9_.-]+)\\?"`),
		mask: func(line []byte, m []int) []byte {
			if m[0] == 0 || line[m[0]-1] != '"' || !SecretName(string(line[m[4]:m[5]])) {
				return nil
			}
			return group(1)(line, m)
		}},
	// Calls that set a named value: PHP's define('DB_PASSWORD', 'X')
	// (wp-config.php), Python's os.environ.setdefault, putenv, Go's
	// os.Setenv.
	{name: "define-call", hints: []string{"define(", "setdefault(", "putenv(", "setenv("},
		re: regexp.MustCompile(`(?i)\b(?:define|setdefault|putenv|setenv)\([ \t]*\\?["']([A-Za-z0-9_.-]+)\\?["'][ \t]*,[ \t]*(` + valueRE + `)`),
		mask: func(line []byte, m []int) []byte {
			if !SecretName(string(line[m[2]:m[3]])) {
				return nil
			}
			return wordValue(2, "")(line, m)
		}},
	// SQL: CREATE or ALTER USER ... IDENTIFIED [WITH plugin] BY 'X'
	// (MySQL, MariaDB; Oracle's unquoted), PostgreSQL's [ENCRYPTED]
	// PASSWORD 'X' (quoted only: "password incorrect" is prose).
	{name: "sql-password", hints: []string{"identified", "password"},
		re: regexp.MustCompile(`(?i)\bidentified(?:[ \t]+with[ \t]+[A-Za-z0-9_]+)?[ \t]+by(?:[ \t]+password)?[ \t]+('(?:[^'\\\n]|\\.|''[^'\s;,)\\])*(?:'|$)|"(?:[^"\\\n]|\\.)*(?:"|$)|[^\s;'"\\&]+)` +
			`|\bpassword[ \t]+('(?:[^'\\\n]|\\.|''[^'\s;,)\\])*(?:'|$))`),
		mask: func(line []byte, m []int) []byte {
			if m[2] >= 0 {
				return group(1)(line, m)
			}
			return group(2)(line, m)
		}},
	// A PuTTY key file (.ppk) held in a JSON string: the N lines after
	// "Private-Lines: N" are the private key. On lines of their own,
	// carried masks them.
	{name: "ppk", hints: []string{"private-lines"}, reach: 16 << 10,
		re:   regexp.MustCompile(`Private-Lines:[ \t]*([0-9]{1,4})`),
		mask: ppkEscaped},
	// NAME=value, NAME: value, "NAME": "value", \"name\":\"value\",
	// export NAME='a b'; on one line, so "secret:" ending a YAML line
	// does not mask the next one, but "secret: |" masks the block that
	// follows it (carried; in a JSON string, yamlEscaped).
	{name: "assignment", named: true, hints: nameHints, retry: 3,
		re: regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])([A-Za-z0-9_-]+)(\\?["']?\]?[ \t]*(?:=>|=\\u003[eE]|[=:])[ \t]*)(` + valueRE + `)`),
		mask: func(line []byte, m []int) []byte {
			name, sep, v := line[m[2]:m[3]], line[m[4]:m[5]], line[m[6]:m[7]]
			yaml := bytes.IndexByte(sep, ':') >= 0 && !bytes.Contains(sep, []byte("=>"))
			if yaml && (v[0] == '&' || v[0] == '!' || bytes.HasPrefix(v, []byte(`\u0026`))) {
				// A YAML anchor or tag stands before the value.
				if v = yamlPropsValue(line, m); v == nil {
					return nil
				}
			}
			quotedName := sep[0] == '"' || sep[0] == '\'' || bytes.HasPrefix(sep, []byte(`\"`))
			switch {
			case isMasked(v):
				return nil
			case !SecretName(string(name)) && !shortSecret(name, v):
				return nil
			case bytes.Contains(bytes.ToLower(name), []byte("authorization")):
				return nil // the authorization rule keeps the scheme
			case yaml && (bytes.EqualFold(name, []byte("cookie")) || bytes.EqualFold(name, []byte("set-cookie"))):
				return nil // the cookie rule masks every cookie's value
			case yaml && isYAMLAlias(v):
				return nil // a YAML alias (*name) refers to a value
			case bareKey(name) && yaml && !(bytes.EqualFold(name, []byte("pass")) && quotedName && quotedValue(v)):
				return nil // a manifest's "key: nvidia.com/gpu", a verdict's "PASS: ..."
			case bareKey(name) && placeholder.Match(v):
				return nil // usage text: --param KEY=VALUE
			case bareKey(name) && pyLambda(v):
				return nil // Python: sorted(..., key=lambda r: ...) is code
			case v[0] == '{' || v[0] == '[':
				return nil // a structure: its secret members are masked one by one
			case bareKey(name) && pyCall.Match(v):
				return nil // Python in a traceback: scope[key] = result.result() is code
			case literalValue(v):
				return nil // NeMo's add_extra_token_to_sequence=True: a setting, never a secret
			case indicatorLen(v) > 0:
				// YAML's "password: |": the lines after it are the value.
				m[7] = m[6] + indicatorLen(v)
				return yamlEscaped(line, m)
			}
			// A JSON member's bare value ("token": 5) becomes a string, so
			// the JSON stays valid.
			return wordValue(3, jsonQuote(sep))(line, m)
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
// over a table of numbers finds none. Hints that the same rules share
// share a bit (the prefixes of tokens, the fragments of secret names).
var allHints = func() (h hintSet) {
	h.bits = map[string]uint64{}
	users := map[string][]byte{} // hint -> the indexes of the rules that have it
	var words []string
	for i, r := range rules {
		for _, w := range r.hints {
			if _, seen := users[w]; !seen {
				words = append(words, w)
			}
			users[w] = append(users[w], byte(i))
		}
	}
	// A PEM key's BEGIN line is no rule's: the segment masks its lines.
	words = append(words, "-----begin")
	group := map[string]uint64{}
	for _, w := range words {
		key := string(users[w])
		bit, ok := group[key]
		if !ok {
			if len(group) == 64 {
				panic("redact: more than 64 groups of hints")
			}
			bit = uint64(1) << len(group)
			group[key] = bit
		}
		h.bits[w] = bit
		if len(w) == 1 {
			h.single[w[0]] |= bit
			h.isSingle[w[0]] = true
			continue
		}
		k := &h.pair[w[0]][w[1]]
		if *k == 0 {
			h.lists = append(h.lists, nil)
			*k = uint8(len(h.lists))
		}
		h.lists[*k-1] = append(h.lists[*k-1], hint{[]byte(w), bit})
	}
	return h
}()

func init() {
	for _, r := range rules {
		for _, w := range r.hints {
			r.hintBits |= allHints.bits[w]
		}
	}
}

// hintSet finds hints by their first two bytes: pair holds 1 + the index
// in lists of the hints that start with them, 0 for none. Each hint has
// a bit of its own (bits), so one pass tells which hints a line holds.
type hintSet struct {
	isSingle [256]bool
	single   [256]uint64
	pair     [256][256]uint8
	lists    [][]hint
	bits     map[string]uint64
}

type hint struct {
	w   []byte
	bit uint64
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

// in reports whether data holds any hint, in any case: present's loop
// cut short, on the quick path every table of numbers takes.
func (h *hintSet) in(data []byte) bool {
	for i := 0; i < len(data); i++ {
		a := lowerOf[data[i]]
		if h.isSingle[a] {
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
			if i+len(w.w) <= len(data) && foldedPrefix(data[i:], w.w) {
				return true
			}
		}
	}
	return false
}

// next returns the index of the first hint of bits at or after from in
// data, in any case; -1 when there is none.
func (h *hintSet) next(data []byte, from int, bits uint64) int {
	for i := from; i < len(data); i++ {
		a := lowerOf[data[i]]
		if h.single[a]&bits != 0 {
			return i
		}
		if i+1 >= len(data) {
			break
		}
		k := h.pair[a][lowerOf[data[i+1]]]
		if k == 0 {
			continue
		}
		for _, w := range h.lists[k-1] {
			if w.bit&bits != 0 && i+len(w.w) <= len(data) && foldedPrefix(data[i:], w.w) {
				return i
			}
		}
	}
	return -1
}

// present returns the bits of the hints data holds, in any case.
func (h *hintSet) present(data []byte) uint64 {
	var found uint64
	for i := 0; i < len(data); i++ {
		a := lowerOf[data[i]]
		found |= h.single[a]
		if i+1 >= len(data) {
			break
		}
		k := h.pair[a][lowerOf[data[i+1]]]
		if k == 0 {
			continue
		}
		for _, w := range h.lists[k-1] {
			if found&w.bit == 0 && i+len(w.w) <= len(data) && foldedPrefix(data[i:], w.w) {
				found |= w.bit
			}
		}
	}
	return found
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

// secretFlagName: a flag (dashes and all) whose name says it takes a
// secret; --token-file names a file.
func secretFlagName(flag []byte) bool {
	name := strings.TrimLeft(string(flag), "-")
	return secretFlag.MatchString(name) && !notSecret(name)
}

// flagNext: v, what follows a flag, is the next flag (--password --next,
// "--password", "-g"), not a value.
func flagNext(v []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(v, `\"'`), []byte("-"))
}

// jsonQuote is the quote a JSON member's name ends with in sep, the text
// between name and value ("token": , \"token\":), or "" when sep is no
// JSON member's.
func jsonQuote(sep []byte) string {
	if bytes.IndexByte(sep, ':') < 0 {
		return ""
	}
	for _, q := range []string{`\"`, `"`} {
		if bytes.HasPrefix(sep, []byte(q)) {
			return q
		}
	}
	return ""
}

func quotedValue(v []byte) bool {
	return len(v) > 0 && (v[0] == '"' || v[0] == '\'' || bytes.HasPrefix(v, []byte(`\"`)))
}

// wordValue is group(g) for a value that is the match's last submatch: a
// word loses the closers that end it (trimClosers) first, and is masked
// as a string in quotes q when q is set (a JSON member's bare value).
func wordValue(g int, q string) func(line []byte, m []int) []byte {
	return func(line []byte, m []int) []byte {
		s, e := m[2*g], m[2*g+1]
		if quotedValue(line[s:e]) {
			return group(g)(line, m)
		}
		n := trimClosers(line[s:e])
		if n == 0 || isMasked(line[s:s+n]) {
			return nil
		}
		m[2*g+1] = s + n
		if q == "" {
			return group(g)(line, m)
		}
		out := append([]byte{}, line[m[0]:s]...)
		out = append(out, q+Mask+q...)
		return append(out, line[s+n:m[1]]...)
	}
}

// trimClosers returns the length of word v without the brackets and
// commas at its end that close what the word stands in, not open in the
// word itself: {"n":1,"token":5}, (KEY=v), [X_TOKEN=v]; a[1] keeps its
// bracket, and so does a Mask an earlier rule put there.
func trimClosers(v []byte) int {
	n := len(v)
	for n > 0 {
		var open byte
		switch v[n-1] {
		case ',':
			n--
			continue
		case ']':
			open = '['
		case '}':
			open = '{'
		case ')':
			open = '('
		default:
			return n
		}
		if bytes.HasSuffix(v[:n], []byte(Mask)) || bytes.Count(v[:n], []byte{open}) >= bytes.Count(v[:n], v[n-1:n]) {
			return n
		}
		n--
	}
	return n
}

// escapedBreak is a line break escaped in a JSON string, once or more.
var escapedBreak = regexp.MustCompile(`\\+[nr]`)

// blockIndicator is the value of a key whose YAML block scalar follows
// (YAML 1.2 section 8.1.1: |, >, with a chomping and an indentation
// indicator); Go's JSON writes ">" as \u003e.
var blockIndicator = regexp.MustCompile(`^(?:[|>]|\\u003[eE])` + blockHeader)

// blockHeader is what may follow a YAML block scalar's | or >: an
// indentation digit and a chomping sign, in either order (YAML 1.2,
// 8.1.1).
const blockHeader = `(?:[1-9][-+]?|[-+][1-9]?)?`

// indicatorLen is the length of the block indicator v is, or starts with
// before an escaped line break (a word runs on through "\n"); 0 when v is
// none.
func indicatorLen(v []byte) int {
	n := len(blockIndicator.Find(v))
	if n == 0 || (n < len(v) && !bytes.HasPrefix(v[n:], []byte(`\n`)) && !bytes.HasPrefix(v[n:], []byte(`\\n`))) {
		return 0
	}
	return n
}

// authScheme names the HTTP authentication schemes (IANA's registry, and
// Token, AWS4-HMAC-SHA256, NTLM): a credential follows them.
var authScheme = regexp.MustCompile(`(?i)^(?:basic|bearer|digest|hoba|mutual|negotiate|ntlm|oauth|scram-sha-1|scram-sha-256|vapid|token|aws4-hmac-sha256)$`)

// restBlank: what is left of a line holds nothing but blanks, quotes and
// a line continuation.
var restBlank = regexp.MustCompile(`^[ \t"'\\]*$`)

// yamlEscaped masks the lines of a secret's YAML block scalar held in a
// JSON string ("password: |\n  line\n  line\n", or escaped twice, as a
// JSON string holding a JSON holds it): those after the indicator, m's
// value, indented deeper than the key, down to the indentation of the
// first (YAML 1.2 section 8.1.1.1). It returns nil when the line breaks
// are real ones: carried masks those lines.
func yamlEscaped(line []byte, m []int) []byte {
	at := m[7]
	for at < len(line) && (line[at] == ' ' || line[at] == '\t') {
		at++
	}
	brk, level := []byte(`\n`), 1
	if bytes.HasPrefix(line[at:], []byte(`\\n`)) {
		brk, level = []byte(`\\n`), 2
	} else if !bytes.HasPrefix(line[at:], brk) {
		return nil
	}
	keyIndent := 0
	for i := m[2]; i > 0 && line[i-1] == ' '; i-- {
		keyIndent++
	}
	out := append([]byte{}, line[m[0]:at]...)
	indent, masked := -1, false
	for bytes.HasPrefix(line[at:], brk) {
		start := at + len(brk)
		end := yamlLineEnd(line, start, level)
		text := line[start:end]
		t := bytes.TrimLeft(text, " ")
		n := len(text) - len(t)
		if len(bytes.TrimSpace(t)) > 0 {
			if n <= keyIndent || (indent >= 0 && n < indent) {
				break
			}
			if indent < 0 {
				indent = n
			}
			if !isMasked(t) {
				text, masked = append(append([]byte{}, text[:n]...), Mask...), true
			}
		}
		out = append(append(out, brk...), text...)
		at = end
	}
	if !masked {
		return nil
	}
	m[1] = at
	return out
}

// yamlLineEnd is where a line of a YAML block held in a JSON string,
// escaped once (level 1) or twice (level 2), ends from i on: at an escaped
// line break or at the string's closing quote (\" at level 2), or at the
// end.
func yamlLineEnd(line []byte, i, level int) int {
	// next is the character of the once-escaped text at i, and its width.
	next := func(i int) (byte, int, bool) {
		if i >= len(line) || (level == 2 && line[i] == '"') {
			return 0, 0, false
		}
		if level == 2 && line[i] == '\\' && i+1 < len(line) {
			return line[i+1], 2, true
		}
		return line[i], 1, true
	}
	for {
		c, w, ok := next(i)
		if !ok || c == '"' {
			return i
		}
		if c == '\\' {
			c2, w2, ok2 := next(i + w)
			if !ok2 || c2 == 'n' {
				return i
			}
			w += w2
		}
		i += w
	}
}

// escapedEnd is where the text of an escaped JSON string inside a JSON
// string, from i on, ends: at its escaped closing quote (\"), not one the
// inner string escapes (\\\"), or the end.
func escapedEnd(line []byte, i int) int {
	innerEsc := false
	for i < len(line) {
		c, w := line[i], 1
		if c == '"' {
			return i // the outer string's end: the inner one is cut short
		}
		if c == '\\' && i+1 < len(line) {
			c, w = line[i+1], 2 // an outer escape: the inner string's character
		}
		switch {
		case innerEsc:
			innerEsc = false
		case w == 2 && c == '\\':
			innerEsc = true
		case w == 2 && c == '"':
			return i
		}
		i += w
	}
	return len(line)
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
// gives \"[REDACTED]\", 'a'\”b' gives '[REDACTED]'; an unclosed "x
// stays unclosed.
func maskValue(v []byte) []byte {
	for _, q := range []string{`\"`, `"`, `'`} {
		if bytes.HasPrefix(v, []byte(q)) {
			closed := closingQuote(v[len(q):], q[0]) >= 0
			if q == `\"` {
				closed = bytes.Contains(v[len(q):], []byte(q))
			}
			if closed {
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

// toolValue is a value after a client's flag: quoted (also escaped in a
// JSON string), or a word up to a blank, quote or backslash.
const toolValue = `\\"(?:[^"\\]|\\[^"])*(?:\\"|$)|'[^']*(?:'|$)|"[^"]*(?:"|$)|[^\s'"\\]+`

// toolMask masks submatch 1, a client flag's value, unless it is the next
// flag (docker login --password-stdin).
func toolMask(line []byte, m []int) []byte {
	if flagNext(line[m[2]:m[3]]) {
		return nil
	}
	return group(1)(line, m)
}

// cookieMask masks the values of the cookies that follow a Cookie header's
// name (m ends there): every pair's, or Set-Cookie's first; nil when
// none is left to mask.
func cookieMask(line []byte, m []int) []byte {
	set := m[3]-m[2] > len("cookie")
	out := append([]byte{}, line[m[0]:m[1]]...)
	i, masked := m[1], false
	for {
		j := i
		for j < len(line) && cookieOctet(line[j]) && line[j] != '=' {
			j++
		}
		vs := i // a value without a name (a cookie "=" never opened)
		if j < len(line) && line[j] == '=' {
			vs = j + 1
		}
		ve := cookieValueEnd(line, vs)
		if v := line[vs:ve]; len(v) > 0 && !isMasked(v) {
			out = append(append(out, line[i:vs]...), maskValue(v)...)
			masked = true
		} else {
			out = append(out, line[i:ve]...)
		}
		i = ve
		if set || i >= len(line) || line[i] != ';' {
			break
		}
		k := i + 1
		for k < len(line) && line[k] == ' ' {
			k++
		}
		out = append(out, line[i:k]...)
		i = k
	}
	if !masked {
		return nil
	}
	m[1] = i
	return out
}

// cookieOctet: c may be part of a cookie's value (RFC 6265 section 4.1.1:
// no blank, double quote, comma, semicolon or backslash).
func cookieOctet(c byte) bool {
	return c > ' ' && c != '"' && c != ',' && c != ';' && c != '\\' && c != '\'' && c < 0x7f
}

// cookieValueEnd is where a cookie's value that starts at i ends: a run of
// cookie octets, or one in double quotes (escaped in a JSON string) that
// a separator follows.
func cookieValueEnd(line []byte, i int) int {
	for _, q := range []string{`\"`, `"`} {
		if !bytes.HasPrefix(line[i:], []byte(q)) {
			continue
		}
		j := i + len(q)
		for j < len(line) && cookieOctet(line[j]) {
			j++
		}
		if bytes.HasPrefix(line[j:], []byte(q)) {
			k := j + len(q)
			if k == len(line) || line[k] == ';' || line[k] == ' ' || line[k] == '\t' || q == `\"` {
				return k
			}
		}
		return i
	}
	j := i
	for j < len(line) && cookieOctet(line[j]) {
		j++
	}
	return j
}

// ppkEscaped masks the lines of a PuTTY key's private part held in a JSON
// string: the N base64 lines, each after an escaped line break, that
// follow "Private-Lines: N" (m). It returns nil when the line breaks are
// real ones: carried masks those lines.
func ppkEscaped(line []byte, m []int) []byte {
	n, _ := strconv.Atoi(string(line[m[2]:m[3]])) // 1-4 digits: the pattern's
	out := append([]byte{}, line[m[0]:m[1]]...)
	i, masked := m[1], false
	for ; n > 0; n-- {
		brk := escapedBreakAt.Find(line[i:])
		if brk == nil {
			break
		}
		j := i + len(brk)
		k := j
		for k < len(line) && (isBase64(line[k]) || line[k] == '=' || line[k] == '\\' && k+1 < len(line) && line[k+1] == '/') {
			if line[k] == '\\' {
				k++
			}
			k++
		}
		if k == j {
			break
		}
		out = append(append(out, line[i:j]...), Mask...)
		i, masked = k, true
	}
	if !masked {
		return nil
	}
	m[1] = i
	return out
}

// escapedBreakAt is a line break escaped in a JSON string (once or more)
// at the start of a text.
var escapedBreakAt = regexp.MustCompile(`^(?:\\+r)?\\+n`)

// urlPasswordEnd is where a URL's password that starts at i, after
// "scheme://user:", ends: at the last "@" before the first "/" (or "\/",
// as nccl-tests escapes it); with none there, at the "@" after that "/"
// when the text before it is no port (digits) and no query or fragment
// comes first. It is i when there is no password.
func urlPasswordEnd(line []byte, i int) int {
	stop := func(j int) bool {
		switch c := line[j]; c {
		case ' ', '\t', '\n', '\r', '"', '\'', '<', '>':
			return true
		case '\\':
			return j+1 >= len(line) || line[j+1] != '/'
		}
		return false
	}
	at, slash := -1, -1
	for j := i; j < len(line) && !stop(j); j++ {
		if line[j] == '/' || line[j] == '\\' {
			slash = j
			break
		}
		if line[j] == '@' {
			at = j
		}
	}
	if at >= 0 {
		return at
	}
	if slash <= i || allDigits(line[i:slash]) {
		return i
	}
	for j := slash; j < len(line) && !stop(j); j++ {
		switch line[j] {
		case '@':
			return j
		case '?', '#':
			return i
		}
	}
	return i
}

// documentHoldsSecret reports whether dec, a decoded base64 document,
// holds what masking masks. It is set in init: masking runs the rules,
// one of which calls it.
var documentHoldsSecret func(dec []byte) bool

func init() {
	documentHoldsSecret = func(dec []byte) bool { return !bytes.Equal(Bytes(dec), dec) }
}

// yamlPropsValue moves m's value (submatch 3) past the YAML anchor (&a)
// and tag (!!str) that stand before it (YAML 1.2 section 6.9), and
// returns it; nil when no value follows them on the line (an anchored
// mapping: "defaults: &defaults").
func yamlPropsValue(line []byte, m []int) []byte {
	i := m[6]
	for i < len(line) && (line[i] == '&' || line[i] == '!' || bytes.HasPrefix(line[i:], []byte(`\u0026`))) {
		for i < len(line) && line[i] != ' ' && line[i] != '\t' {
			i++
		}
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
	}
	if i >= len(line) {
		return nil
	}
	loc := nextValue.FindSubmatchIndex(line[i:])
	if loc == nil || loc[2] == loc[3] {
		return nil
	}
	m[6], m[7] = i+loc[2], i+loc[3]
	m[1] = m[7]
	return line[m[6]:m[7]]
}

// yamlAlias is a YAML alias (*name): a reference to an anchored value,
// not one; MySQL's password hashes (* and 40 hex digits) are none.
var (
	yamlAlias = regexp.MustCompile(`^\*[A-Za-z_][A-Za-z0-9_.-]*$`)
	mysqlHash = regexp.MustCompile(`^\*[0-9A-Fa-f]{40}$`)
)

func isYAMLAlias(v []byte) bool { return yamlAlias.Match(v) && !mysqlHash.Match(v) }

// shortSecret: a bare PWD (ODBC's password keyword, a YAML "pwd:") holds
// a secret unless its value is a directory, as the shell's PWD=/home/x
// and $PWD are.
func shortSecret(name, v []byte) bool {
	return bytes.EqualFold(name, []byte("pwd")) && !pathLike(v)
}

// pathLike: v (unquoted) is a directory or a shell expansion: /x, ~/x,
// ./x, \/x (JSON-escaped), C:\x, $HOME, ${X}, $(pwd); or nothing.
func pathLike(v []byte) bool {
	v = bytes.TrimLeft(v, `"'\`)
	if len(v) == 0 {
		return true
	}
	switch v[0] {
	case '/', '~', '$':
		return true
	case '.':
		return bytes.HasPrefix(v, []byte("./")) || bytes.HasPrefix(v, []byte("../")) || bytes.Equal(v, []byte(".")) || bytes.Equal(v, []byte(".."))
	}
	return len(v) >= 3 && v[1] == ':' && (v[2] == '\\' || v[2] == '/') && ('A' <= v[0] && v[0] <= 'Z' || 'a' <= v[0] && v[0] <= 'z')
}

// pyLambda: v is a Python lambda ("lambda", then a blank, ":" or the
// end), the value of sorted's or max's key argument in a command that
// carries a script inline (torchbench.py under python3 -c).
func pyLambda(v []byte) bool {
	rest, ok := bytes.CutPrefix(v, []byte("lambda"))
	return ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == ':')
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
		from := at
		if ru.named {
			// The match holds a hint in the name it starts with: look
			// from that name on (a long line's other text never meets
			// the regular expression).
			h := allHints.next(line, at, ru.hintBits)
			if h < 0 {
				break
			}
			for h > at && nameChar(line[h-1]) {
				h--
			}
			from = max(at, h-2)
		}
		m := ru.re.FindSubmatchIndex(line[from:])
		if m == nil {
			break
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += from
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
	// skip, when set, says what ends a secret value that was masked up to
	// a cut of its line (skipWord, ...): what follows the cut is dropped
	// up to there.
	skip int
	// midLine: the last segment was a piece of a line cut short, so the
	// next one goes on with that line.
	midLine bool
	// plain: the lines being masked are of a chunk without a trigger
	// (hasTrigger), so none needs its view.
	plain bool
	// noKnown: the chunk holds no form of a known value (r.known).
	noKnown bool
	// yaml: a secret's YAML block scalar is open. Its lines are those
	// indented deeper than yamlMin, the key's indentation, and as deep as
	// yamlIndent, its first line's (0 before that line).
	yaml                bool
	yamlMin, yamlIndent int
	// b64: the base64 of a private key, wrapped, goes on; b64Width is the
	// length of its first line.
	b64      bool
	b64Width int
	// next says what the next line starts with: the value of a secret
	// flag that ended this one, or an Authorization header's credential.
	next nextKind
	// quote, when set, is the quote a secret value opened and no line
	// has closed yet (NAME='a value of lines): the lines up to it are
	// the value's.
	quote byte
	// ppk is how many lines of a PuTTY key's private part are still to
	// come (its "Private-Lines: N" seen).
	ppk int
}

// What ends a value masked up to a cut (state.skip).
const (
	skipNone   = iota
	skipWord   // the end of wordRest
	skipDouble // a double quote, or the line's end
	skipSingle // a single quote, or the line's end
)

// skipEnd is the length of what body (the piece after a cut) starts with
// of a value that ends as kind says.
func skipEnd(kind int, body []byte) int {
	switch kind {
	case skipWord:
		n := wordRest(body)
		if n == len(body) {
			return n
		}
		return trimClosers(body[:n])
	case skipDouble, skipSingle:
		q := byte('"')
		if kind == skipSingle {
			q = '\''
		}
		if i := bytes.IndexByte(body, q); i >= 0 {
			return i
		}
	}
	return len(body)
}

// quiet reports whether data can pass unchanged without looking at its
// lines: no rule's hint, no known value, no key open.
func (r *Redactor) quiet(st *state, data []byte) bool {
	if st.inPEM || st.skip != skipNone || st.midLine || st.yaml || st.b64 || st.next != nextNone || st.quote != 0 || st.ppk != 0 {
		return false
	}
	if r.anyKnown(data) {
		return false
	}
	if bytes.ContainsAny(data, "\x00\x1b") {
		// A name or a value may lie split (segmentSplit): quiet as the
		// text reads on a terminal.
		return r.quiet(st, splitter.ReplaceAll(data, nil))
	}
	if allHints.in(data) {
		return false
	}
	// Quiet as a reader reads it: the view only where the chunk holds
	// what the view changes.
	return !hasTrigger(data) || !r.viewHolds(data)
}

// anyKnown reports whether data holds a form of a known value of r.
func (r *Redactor) anyKnown(data []byte) bool {
	if r == nil {
		return false
	}
	for i, k := range r.known {
		if r.holds(data, k, r.anchor[i]) {
			return true
		}
	}
	return false
}

// holds reports whether data holds k, looked for from k[a:].
func (r *Redactor) holds(data, k []byte, a int) bool {
	if a == 0 {
		return bytes.Contains(data, k)
	}
	for off := a; off < len(data); {
		j := bytes.Index(data[off:], k[a:])
		if j < 0 {
			return false
		}
		if p := off + j - a; bytes.Equal(data[p:p+a], k[:a]) {
			return true
		}
		off += j + 1
	}
	return false
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
		st.plain = !hasTrigger(piece)
		st.noKnown = !r.anyKnown(piece)
		for len(piece) > 0 {
			line := piece
			if i := bytes.IndexByte(piece, '\n'); i >= 0 {
				line = piece[:i+1]
			}
			piece = piece[len(line):]
			out.Write(r.segmentSplit(st, line))
		}
		st.plain, st.noKnown = false, false
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
	atStart := !st.midLine
	st.midLine = eol == nil
	if st.skip != skipNone {
		i := skipEnd(st.skip, body)
		if i == len(body) && eol == nil {
			return nil // all of it is the rest of the masked value
		}
		body = body[i:]
		st.skip = skipNone
	}
	if r != nil && !st.noKnown {
		for _, k := range r.known {
			if bytes.Contains(body, k) {
				if r.inRun[string(k)] {
					body = maskInRun(body, k)
				} else {
					body = bytes.ReplaceAll(body, k, []byte(Mask))
				}
			}
		}
	}
	// Known values and tokens in other forms than their bytes: each
	// character encoded, split by what a reader does not see.
	if !st.plain {
		body = r.maskViewed(body)
	}
	var head []byte
	switch {
	case st.inPEM:
		loc := pemEnd.FindIndex(body)
		if loc == nil {
			return join(maskedBody(body), eol)
		}
		st.inPEM = false
		head = maskedBody(body[:loc[0]])
		body = body[loc[0]:]
	case atStart:
		if out, whole := st.carried(body); whole {
			return join(out, eol)
		} else if out != nil {
			body = out
		}
	case st.yaml || st.b64:
		return eol // the rest of a line whose start is masked
	case st.quote != 0:
		i := closingQuote(body, st.quote)
		if i < 0 {
			return eol // the value goes on
		}
		st.quote = 0
		body = body[i:]
	}
	// The last key begun on the line, if no END follows it, goes on.
	if locs := pemBegin.FindAllIndex(body, -1); locs != nil && pemEnd.FindIndex(body[locs[len(locs)-1][1]:]) == nil {
		loc := locs[len(locs)-1]
		// The key's lines follow, through its END line.
		st.inPEM = true
		return join(head, r.rules(st, body[:loc[1]]), maskedBody(body[loc[1]:]), eol)
	}
	out := r.rules(st, body)
	if eol != nil {
		st.opens(body, out, atStart)
	}
	return join(head, out, eol)
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
// "b"; escaped, \"a\",\"b\", in a JSON string that holds a JSON, as an
// outputs.json holds a -J JSON): no JSON string holds that (its quotes
// would be escaped), and no masking needs to reach across it.
func (r *Redactor) rules(st *state, line []byte) []byte {
	if len(line) < longLine {
		return r.part(st, line)
	}
	var out []byte
	last, flag := 0, false
	// part masks one element; one that follows a secret flag's element
	// ("--auth-token", "X") is that flag's value.
	part := func(p []byte) {
		if flag {
			if masked := flagValue(p); masked != nil {
				p = masked
			}
		}
		f := endingFlag(bytes.TrimRight(p, " \t"))
		flag = f != nil && secretFlagName(f)
		out = append(out, r.part(st, p)...)
	}
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
		escaped := at >= 3 && line[at-3] == '\\' && next+1 < len(line) && line[next] == '\\' && line[next+1] == '"'
		if pairMember(line[next:]) {
			continue // an env entry's name and value stay in one part
		}
		if next < len(line) && line[next] == '"' || escaped {
			// The next element's opening quote starts the next part.
			part(line[last:next])
			last = next
		}
	}
	part(line[last:])
	return out
}

// pairMember: b starts with the member "name" or "value" of a JSON object
// (also escaped), which the name-value rule reads together with the
// member before it.
func pairMember(b []byte) bool {
	b = bytes.TrimPrefix(b, []byte(`\`))
	return bytes.HasPrefix(b, []byte(`"name`)) || bytes.HasPrefix(b, []byte(`"value`))
}

// part applies every rule whose hint part holds.
func (r *Redactor) part(st *state, line []byte) []byte {
	have := allHints.present(line)
	if have != 0 && (bytes.Contains(line, []byte(`'\`)) || bytes.Contains(line, []byte(`\&#39;`))) {
		line = unshell(line)
	}
	for _, ru := range rules {
		if have&ru.hintBits != 0 && (ru.needs == nil || bytes.Contains(line, ru.needs)) {
			line = ru.apply(line)
		}
	}
	return line
}

// shellQuotes are the ways a single quote inside a single-quoted shell
// word shows ('\”, as launchers quote a value that holds one): raw, in a
// JSON string, and HTML-escaped; and how each form writes a quote
// elsewhere.
var shellQuotes = []struct {
	form   string
	decode func(string) string
	encode func(string) string
}{
	{`'\''`, func(s string) string { return strings.ReplaceAll(s, `'\''`, "'") },
		func(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }},
	{`'\\''`, func(s string) string { return strings.ReplaceAll(s, `'\\''`, "'") },
		func(s string) string { return strings.ReplaceAll(s, "'", `'\\''`) }},
	{`&#39;\&#39;&#39;`, func(s string) string { return strings.ReplaceAll(html.UnescapeString(s), `'\''`, "'") },
		func(s string) string { return html.EscapeString(strings.ReplaceAll(s, "'", `'\''`)) }},
}

// unshell masks the secrets of a line that holds shell-quoted values with
// single quotes inside them (PLANT='{'\”password'\”: '\”X'\”}'):
// the rules read the quotes around names and values, so they read the
// line with its quotes as the value held them, and what they mask there
// is masked in the line, in the line's form.
func unshell(line []byte) []byte {
	for _, q := range shellQuotes {
		if !bytes.Contains(line, []byte(q.form)) {
			continue
		}
		for _, v := range Secrets(q.decode(string(line))) {
			for _, f := range []string{q.encode(v), v} {
				if len(f) >= minKnown {
					line = bytes.ReplaceAll(line, []byte(f), []byte(Mask))
				}
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
	have := allHints.present(text)
	for _, ru := range rules {
		if have&ru.hintBits != 0 && (ru.needs == nil || bytes.Contains(text, ru.needs)) {
			for _, m := range ru.re.FindAllIndex(text, -1) {
				out = append(out, span{m[0], min(len(text), m[1]+ru.reach)})
			}
		}
	}
	return out
}

// segmentSplit is segment for a line that may hold NULs or escape
// sequences (splitter) inside a secret's name or value, which a terminal
// shows joined (HF_TO\x00KEN=...): when the line without them holds a
// secret, that line is masked and written, its NULs and escapes dropped;
// else the line is masked as it is.
func (r *Redactor) segmentSplit(st *state, line []byte) []byte {
	if !bytes.ContainsAny(line, "\x00\x1b") {
		return r.segment(st, line)
	}
	joined := splitter.ReplaceAll(line, nil)
	probe := *st
	if bytes.Equal(r.segment(&probe, joined), joined) {
		return r.segment(st, line)
	}
	return r.segment(st, joined)
}

// splitter matches what a log may put between a known value's characters
// and a terminal does not show: NUL, and ESC with the CSI or OSC sequence
// it starts (colours, a title).
var splitter = regexp.MustCompile("\x00|\x1b(?:\\[[0-?]*[ -/]*[@-~]|\\][^\x07\x1b]*(?:\x07|\x1b\\\\)|[@-_])?")

// literalValue says v is a Python or JSON literal (True, False, None,
// true, false, null), which no secret is.
func literalValue(v []byte) bool {
	switch string(v) {
	case "True", "False", "None", "true", "false", "null":
		return true
	}
	return false
}

// pyCall is a value that is a Python call (result.result(), f(x)): code
// quoted in a traceback, not a secret.
var pyCall = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*\([^()]*\)$`)
