// Package redact removes secrets from everything gpuaccept writes or prints:
// raw outputs (nccl-tests' -J JSON dumps the whole environment; mpirun and
// shells echo it), copies of logs judged by check, recorded command lines
// and parameters, reports, the journal, and what the commands print. It is
// the one masking path: files are written through Writer or Bytes, printed
// output through Stream, structures (a run's results) through Value.
// It also owns the one escaping of what is shown (Printable): the
// commands' stdout and stderr go through Printed, the text reports
// (table.txt, summary.md) through Printable, JSON through PrintableJSON,
// so that no control or format character from a file name, a node or a
// benchmark's output reaches a terminal or a text report as it is.
//
// It masks
//   - values of variables, keys, headers, flags and XML elements whose
//     names say they are secrets (HF_TOKEN=, "password": , X-Api-Key:,
//     --auth-token, KEY=, MYSQL_PWD=, REDIS_PW=, PGPASS=, CI_JOB_JWT=,
//     a name ending in _CREDS, _PSW, _SALT, _OTP or _PIN,
//     DOCKER_AUTH_CONFIG's "auth", <password>, Open MPI's --mca NAME
//     VALUE, ~/.aws/credentials' keys, also inside JSON strings, whose
//     quotes and slashes are escaped); a value runs to a blank, through
//     brackets and quotes (a]b, ab"cd, and a shell's quoting of a quote);
//   - values that go on over lines: a YAML block scalar (password: |),
//     a quoted value not closed on its line, a -J JSON's "args" element
//     after a secret flag's, an Authorization header's credential on the
//     line after its scheme (a shell's "\" continuation, HTTP's folding);
//   - credentials by their shape: PEM private keys (across lines, or on one
//     line as a JSON string holds them) and their base64 (kubeconfig
//     client-key-data; wrapped over lines as base64(1) and openssl write
//     it), PuTTY keys' private lines, the base64 of a JSON or YAML document
//     holding a secret (a Secret's .dockerconfigjson, a kubeconfig),
//     GitHub, GitLab, Slack, Hugging Face, npm, Google (API keys, OAuth
//     ya29.), OpenAI, Anthropic, Stripe, NVIDIA nvapi-, PyPI, Docker Hub
//     and Vault tokens, AWS access key IDs, JWTs, Azure SAS signatures,
//     S3, Cloud Storage and CloudFront signed URLs and SigV4 headers, Slack
//     and Discord webhook URLs, passwords and tokens in URLs (the user
//     empty or not) and in user:password@host, Authorization headers of
//     any scheme, every cookie of a Cookie header, sshpass -p, curl -u,
//     the MySQL clients' -pPASSWORD, docker and az login -p, ipmitool -P,
//     smbclient -U user%password, ldapsearch -w, redis-cli -a, htpasswd
//     -b's password, echo PASSWORD | docker login --password-stdin, zip
//     and unzip -P, a Dockerfile's ENV NAME value and csh's setenv NAME
//     value (a blank, no "="), openssl's
//     pass:PASSWORD, SQL's IDENTIFIED BY and PASSWORD '...', .netrc's
//     password;
//   - values named in code and data: a pod spec's env (name, then value,
//     on one line or the next), Python dicts and os.environ[...], PHP's
//     define(), Ruby's :password =>, YAML anchors and tags before a
//     value, ODBC's PWD (not the shell's PWD=/dir), a JSON "pass", psk=;
//     also inside a shell-quoted value that holds single quotes (each
//     written quote, backslash, quote, quote);
//   - any literal value the caller knows to be secret (the environment's),
//     also as JSON, HTML and XML escape it, URL-encoded, quoted by Go's %q,
//     bash's printf %q and Python's repr(); as hex and as base64 (either
//     alphabet, any alignment; the base64 run masked whole); and in a
//     line's view (normal.go): each character percent-encoded or not, an
//     HTML numeric entity, a JSON \uXXXX escape or fullwidth, with NULs,
//     escape sequences, CRs, overstrikes (X\b) or invisible characters
//     (ZWSP, ZWNJ, ZWJ, soft hyphen, BOM, bidi marks) between them: the
//     bytes the match came from are masked;
//   - tokens by their shape in the same view, and inside a base64 or hex
//     run (found by the encodings of their prefixes);
//   - a line as a terminal shows it: a name or value split by NULs or
//     escape sequences (HF_TO\x00KEN=...) is masked, the line then written
//     without them.
//
// Names stay (a reader sees that a secret was set); the value becomes
// Mask. Masking is idempotent. Real benchmark outputs pass through byte
// for byte (the package's tests run every recording under testdata).
package redact

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Mask replaces a redacted value.
const Mask = "[REDACTED]"

// secretNameRE matches names that hold secrets: any name containing TOKEN,
// SECRET, PASSWORD, API_KEY, CREDENTIAL, AUTH, COOKIE, JWT, WEBHOOK, ...
// (components may be joined by "_" or "-": X-Api-Key, client-key-data);
// SSHPASS and PGPASS; names with a whole PAT, PASS, KEY, PWD or PW
// component next to another one (GH_PAT, DB_PASS, SSH_KEY, MYSQL_PWD,
// REDIS_PW; not PATH, PWD or OLDPWD); and a bare KEY or PASS, masked only
// as KEY=value (Kubernetes manifests name label and toleration keys
// "key:", verdicts read "PASS: ..."); and names ending in a CREDS, PSW,
// SALT, OTP or PIN component (Jenkins' BITBUCKET_CREDS and _PSW,
// npm_config_otp, HASH_SALT, PKCS11_PIN): only at the end, as pin_memory,
// otp_enabled and salt_length hold no secret. See also notSecret.
const secretNameRE = `[A-Za-z0-9_-]*(?i:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|SSHPASS|PGPASS|API[-_]?KEY|ACCESS[-_]?KEY|PRIVATE[-_]?KEY|ACCOUNT[-_]?KEY|CLIENT[-_]KEY|SHARED[-_]?ACCESS[-_]?SIGNATURE|CREDENTIAL|AUTH|COOKIE|JWT|WEBHOOK)[A-Za-z0-9_-]*` +
	`|(?:[A-Za-z0-9]+[_-])+(?i:PAT|PASS|KEY|PWD|PW|PSK)(?:[_-][A-Za-z0-9]+)*|(?i:PAT|PASS|KEY|PW|PSK)(?:[_-][A-Za-z0-9]+)+|(?i:KEY|PASS|PSK)` +
	`|(?:[A-Za-z0-9]+[_-])+(?i:CREDS|PSW|SALT|OTP|PIN)`

var secretName = regexp.MustCompile(`^(?:` + secretNameRE + `)$`)

// SecretName reports whether a variable, parameter, key or header name
// looks like it holds a secret (HF_TOKEN, DB_PASS, WANDB_API_KEY, GH_PAT,
// X-Api-Key; not PATH, not secretName or TOKEN_FILE, not max_tokens: see
// notSecret).
func SecretName(name string) bool {
	return mayBeSecretName(name) && secretName.MatchString(name) && !notSecret(name)
}

// secretWords are the words one of which, in any case, every name that
// secretNameRE matches holds: the quick test before the regular
// expression, which most names (busbw, NCCL_DEBUG) fail.
var secretWords = []string{"token", "secret", "pass", "key", "signature", "credential", "auth", "cookie", "jwt", "webhook", "pat", "pw", "psk", "creds", "psw", "salt", "otp", "pin"}

// secretInitials are the first letters of secretWords.
var secretInitials = func() (t [256]bool) {
	for _, w := range secretWords {
		t[w[0]] = true
	}
	return t
}()

func mayBeSecretName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := lowerOf[name[i]]
		if !secretInitials[c] {
			continue
		}
		for _, w := range secretWords {
			if w[0] == c && len(name)-i >= len(w) && foldedPrefix([]byte(name[i:i+len(w)]), []byte(w)) {
				return true
			}
		}
	}
	return false
}

// referenceSuffixes end names that refer to a secret rather than hold one:
// Kubernetes' secretName and secretKeyRef, sshAuthMountPath, a TOKEN_FILE
// path, docker login's --password-stdin. Their values are names and paths, and masking them hides what a
// manifest or command does.
var referenceSuffixes = []string{"name", "ref", "path", "file", "dir", "mode", "stdin"}

func notSecret(name string) bool {
	lower := strings.ToLower(name)
	switch {
	case strings.HasSuffix(lower, "key-pair-id"):
		return true // CloudFront's Key-Pair-Id names a public key
	case strings.HasPrefix(lower, "putty-user-key-file-"):
		return true // a PuTTY key file's first line names its algorithm
	case strings.HasSuffix(lower, "error") || strings.HasSuffix(lower, "exception"):
		return true // an exception's message follows it (AuthenticationError: ...)
	}
	for _, s := range referenceSuffixes {
		if strings.HasSuffix(lower, s) {
			return true
		}
	}
	// "tokens" counts what a model reads (Mori-EP's max_tokens_per_rank:
	// 256), unless another part of the name says secret.
	if strings.Contains(lower, "tokens") {
		return !secretName.MatchString(strings.ReplaceAll(lower, "tokens", "_"))
	}
	// "tokenizer" names the model's tokenizer (NeMo's
	// tokenizer=<...ByteLevelTokenizer object at 0x7f...>, a tokenizer
	// model's path), unless another part of the name says secret.
	if strings.Contains(lower, "tokenizer") {
		return !secretName.MatchString(strings.ReplaceAll(lower, "tokenizer", "_"))
	}
	return false
}

// Redactor masks the patterns of the package and a set of known secret
// values. The zero value, and a nil *Redactor, mask the patterns only. A
// Redactor is not changed after New and may be shared between goroutines.
type Redactor struct {
	known   [][]byte // longest first, so a value that contains another goes whole
	longest int
	values  []string // the values New was given, minKnown bytes or more
	views   [][]byte // each value as normalView reads it, to find in a line's view
	// anchor[i]: where in known[i] its first byte other than a digit, a
	// dot or a blank is: a chunk is searched from there (a table of
	// numbers holds a hex form's leading digits everywhere).
	anchor []int
	// inRun: forms of known (base64) whose match is masked with the run of
	// base64 around it, whose edge characters hold bits of the value.
	inRun map[string]bool
}

// minKnown is the shortest known value masked literally: shorter ones
// ("1", "yes") would mask ordinary output.
const minKnown = 4

// New returns a Redactor that also masks every occurrence of the given
// values (those of minKnown bytes or more), raw and in the forms JSON,
// nccl-tests' JSON (which escapes "/" too), HTML and XML write them.
func New(known ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, k := range known {
		if len(k) < minKnown || k == Mask || seen["value:"+k] {
			continue
		}
		seen["value:"+k] = true
		r.values = append(r.values, k)
		if v, _, _ := normalView([]byte(k)); len(v) >= minKnown {
			r.views = append(r.views, v)
		}
		hexForms, b64Forms := encodedForms(k)
		for _, f := range b64Forms {
			if !seen[f] {
				if r.inRun == nil {
					r.inRun = map[string]bool{}
				}
				r.inRun[f] = true
			}
		}
		for _, f := range slices.Concat(escapedForms(k), hexForms, b64Forms) {
			if !seen[f] {
				seen[f] = true
				r.known = append(r.known, []byte(f))
				r.longest = max(r.longest, len(f))
			}
		}
	}
	sort.Slice(r.known, func(i, j int) bool { return len(r.known[i]) > len(r.known[j]) })
	r.anchor = make([]int, len(r.known))
	for i, k := range r.known {
		r.anchor[i] = max(0, bytes.IndexFunc(k, func(c rune) bool { return !('0' <= c && c <= '9' || c == '.' || c == ' ') }))
	}
	return r
}

// With returns a Redactor that masks what r masks and the given values
// too (as New takes them).
func (r *Redactor) With(known ...string) *Redactor {
	if r != nil {
		known = append(known, r.values...)
	}
	return New(known...)
}

// escapedForms are the ways a value shows in the files gpuaccept writes
// and reads: as is, inside a JSON string (with and without HTML escaping,
// with "/" escaped as nccl-tests does), and HTML or XML escaped.
func escapedForms(v string) []string {
	forms := []string{v}
	inner := func(b []byte) string {
		return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(string(b)), `"`), `"`)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) == nil {
		forms = append(forms, inner(b.Bytes()))
	}
	if j, err := json.Marshal(v); err == nil {
		forms = append(forms, inner(j))
	}
	for _, f := range forms[1:] {
		forms = append(forms, strings.ReplaceAll(f, "/", `\/`))
	}
	forms = append(forms, html.EscapeString(v))
	b.Reset()
	if xml.EscapeText(&b, []byte(v)) == nil {
		forms = append(forms, b.String())
	}
	forms = append(forms, strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;", `"`, "&quot;", `'`, "&apos;").Replace(v))
	// URL-encoded (a query's value, a path segment), quoted by Go's %q,
	// by bash's printf %q and by Python's repr() in either of its quotes.
	forms = append(forms, url.QueryEscape(v), url.PathEscape(v), strings.ReplaceAll(url.QueryEscape(v), "+", "%20"))
	q := strconv.Quote(v)
	forms = append(forms, q[1:len(q)-1], shellQuoted(v), pythonRepr(v, '\''), pythonRepr(v, '"'))
	// Other encodings, each character's or the whole value's: see
	// normalView and encodedForms.
	return forms
}

// shellQuoted is v as bash's printf %q writes a printable value: each
// character the shell reads specially after a backslash.
func shellQuoted(v string) string {
	var b strings.Builder
	for _, c := range v {
		if strings.ContainsRune(" \t!\"#$&'()*,;<=>?[\\]^`{|}~", c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// pythonRepr is the inside of Python's repr() of v in quote q: the
// backslash, q, and control characters escaped.
func pythonRepr(v string, q rune) string {
	var b strings.Builder
	for _, c := range v {
		switch {
		case c == '\\' || c == q:
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// FromEnv returns a Redactor that knows the values of the secret-named
// variables of environ ("NAME=value" strings) and of the secret-named
// parameters (keys like "env.HF_TOKEN" or "password"), and the secrets
// written inside any parameter's value (Secrets: a command line's
// "export MYSQL_PWD=...", which the command may then print bare).
func FromEnv(environ []string, params map[string]string) *Redactor {
	var known []string
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && SecretName(k) {
			known = append(known, v)
		}
	}
	for k, v := range params {
		if SecretName(paramName(k)) {
			known = append(known, v)
		}
		// A secret written inside a value (a training command's
		// "export MYSQL_PWD=..."): the workload may print it bare.
		for _, sec := range Secrets(v) {
			known = append(known, sec)
			// The shell's punctuation the line masking took with it
			// ("MYSQL_PWD=pw;"): the command prints the value without.
			if t := strings.TrimRight(sec, ";&|)'\""); t != sec && len(t) >= minKnown {
				known = append(known, t)
			}
		}
	}
	return New(known...)
}

// Env is FromEnv of this process's environment and no parameters: what a
// writer that is handed no Redactor masks with.
func Env() *Redactor { return FromEnv(os.Environ(), nil) }

func paramName(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[i+1:]
	}
	return k
}

// Bytes returns data with secrets masked; data may hold many lines (a PEM
// key's lines are masked through its END line) and is not changed.
func (r *Redactor) Bytes(data []byte) []byte {
	var st state
	var out bytes.Buffer
	out.Grow(len(data))
	r.chunk(&st, &out, data)
	return out.Bytes()
}

// Line is Bytes: one line, or several.
func (r *Redactor) Line(line []byte) []byte { return r.Bytes(line) }

// String is Bytes for a string: a command line, a message, a "NAME=value"
// word, a rendered manifest.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// Params returns a copy of params with secrets masked: whole values of
// secret-named keys ("env.HF_TOKEN"), and secrets inside other values.
func (r *Redactor) Params(params map[string]string) map[string]string {
	if params == nil {
		return nil
	}
	out := make(map[string]string, len(params))
	for k, v := range params {
		if SecretName(paramName(k)) {
			v = Mask
		} else {
			v = r.String(v)
		}
		out[r.String(k)] = v
	}
	return out
}

// Secrets returns the values masking s removes (those of minKnown bytes or
// more): what of a command line looks secret, to be masked also where a
// message quotes a piece of it ("admin:pw@host1" quoted as "pw@host1").
// An s of the form NAME=VALUE or --flag=VALUE whose name says secret and
// whose VALUE holds blanks (one argument, where masking a line would stop
// at the first blank) gives its whole VALUE too.
func Secrets(s string) []string {
	masked := String(s)
	var out []string
	if k, v, ok := strings.Cut(s, "="); ok && len(v) >= minKnown && k != "" && strings.ContainsAny(v, " \t\n") && !strings.Contains(v, "=") &&
		(SecretName(paramName(k)) || k[0] == '-' && secretFlagName([]byte(k))) {
		out = append(out, v)
	}
	for rest := masked; ; {
		i := strings.Index(rest, Mask)
		if i < 0 {
			break
		}
		// s has rest's text before the Mask where masked has it; the
		// secret runs from there to where the text after the Mask (up to
		// the next one) resumes.
		before, after := rest[:i], rest[i+len(Mask):]
		at := strings.Index(s, before)
		if at < 0 {
			break
		}
		s = s[at+len(before):]
		next := after
		if j := strings.Index(after, Mask); j >= 0 {
			next = after[:j]
		}
		end := len(s)
		switch {
		case next != "" && next == after && strings.HasSuffix(s, next):
			end = len(s) - len(next) // the last secret: the rest of s follows it
		case next != "":
			if k := strings.Index(s, next); k >= 0 {
				end = k
			}
		}
		if secret := s[:end]; len(secret) >= minKnown {
			out = append(out, secret)
		}
		s, rest = s[end:], after
	}
	return out
}

// Bytes masks the patterns in data (no known values).
func Bytes(data []byte) []byte { return (*Redactor)(nil).Bytes(data) }

// Line masks the patterns in line (no known values).
func Line(line []byte) []byte { return (*Redactor)(nil).Line(line) }

// String masks the patterns in s (no known values).
func String(s string) string { return (*Redactor)(nil).String(s) }
