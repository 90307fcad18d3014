// Package redact removes secrets from everything gpuaccept writes or prints:
// raw outputs (nccl-tests' -J JSON dumps the whole environment; mpirun and
// shells echo it), recorded command lines and parameters. It masks values of
// variables, keys and flags whose names say they are secrets, passwords in
// URLs, bearer tokens, and any literal value the caller knows to be secret
// (a token in the environment that a benchmark prints on its own).
package redact

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
	"sort"
	"strings"
)

// Mask replaces a redacted value.
const Mask = "[REDACTED]"

// secretNameRE matches names that hold secrets: any name containing TOKEN,
// SECRET, PASSWORD, API_KEY, CREDENTIAL, AUTH, COOKIE, ..., and names with a
// whole PAT, PASS or KEY component next to another one (GH_PAT, DB_PASS,
// SSH_KEY; not PATH, and not a bare "key", which Kubernetes manifests use
// for label and toleration keys). See also notSecret.
const secretNameRE = `[A-Za-z0-9_]*(?i:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH|COOKIE)[A-Za-z0-9_]*` +
	`|(?:[A-Za-z0-9]+_)+(?i:PAT|PASS|KEY)(?:_[A-Za-z0-9]+)*|(?i:PAT|PASS|KEY)(?:_[A-Za-z0-9]+)+`

// valueRE is a value after "=" or ":": quoted, or up to a blank, a quote, a
// comma or a closing bracket.
const valueRE = `'[^'\n]*'|"[^"\n]*"|[^\s",'}\]]+`

var (
	secretName = regexp.MustCompile(`^(?:` + secretNameRE + `)$`)
	// NAME=value, NAME: value, "NAME": "value", export NAME='a b'; on one
	// line, so "secret:" ending a YAML line does not mask the next one.
	assign = regexp.MustCompile(`\b(` + secretNameRE + `)("?[ \t]*[=:][ \t]*)(` + valueRE + `)`)
	// --password value, --auth-token=value, -token value.
	flag = regexp.MustCompile(`(?i)(--?[a-z0-9-]*(?:token|password|passwd|secret|api-?key|auth|credential)[a-z0-9-]*)(=|\s+)(` + valueRE + `)`)
	// scheme://user:password@host
	urlCred = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:)[^@\s/]+@`)
	bearer  = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`)
)

// SecretName reports whether a variable or parameter name looks like it
// holds a secret (HF_TOKEN, DB_PASS, WANDB_API_KEY, GH_PAT; not PATH, not
// secretName or TOKEN_FILE, see notSecret).
func SecretName(name string) bool { return secretName.MatchString(name) && !notSecret(name) }

// referenceSuffixes end names that refer to a secret rather than hold one:
// Kubernetes' secretName and secretKeyRef, sshAuthMountPath, a TOKEN_FILE
// path. Their values are names and paths, and masking them hides what a
// manifest or command does.
var referenceSuffixes = []string{"name", "ref", "path", "file", "dir", "mode"}

func notSecret(name string) bool {
	lower := strings.ToLower(name)
	for _, s := range referenceSuffixes {
		if strings.HasSuffix(lower, s) {
			return true
		}
	}
	return false
}

// Redactor masks the patterns above and a set of known secret values.
// The zero value, and a nil *Redactor, mask the patterns only.
type Redactor struct {
	known [][]byte // longest first, so a value that contains another goes whole
}

// minKnown is the shortest known value masked literally: shorter ones
// ("1", "yes") would mask ordinary output.
const minKnown = 4

// New returns a Redactor that also masks every occurrence of the given
// values (those of minKnown bytes or more).
func New(known ...string) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	for _, k := range known {
		if len(k) >= minKnown && !seen[k] && k != Mask {
			seen[k] = true
			r.known = append(r.known, []byte(k))
		}
	}
	sort.Slice(r.known, func(i, j int) bool { return len(r.known[i]) > len(r.known[j]) })
	return r
}

// FromEnv returns a Redactor that knows the values of the secret-named
// variables of environ ("NAME=value" strings) and of the secret-named
// parameters (keys like "env.HF_TOKEN" or "password").
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
	}
	return New(known...)
}

func paramName(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[i+1:]
	}
	return k
}

func quoted(v []byte) []byte {
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
		return append([]byte{v[0]}, append([]byte(Mask), v[0])...)
	}
	return []byte(Mask)
}

// hints are fragments every pattern needs: a line holding none of them is
// left alone without running the regular expressions (the hot path of
// streaming a large log).
var hints = func() [][]byte {
	var out [][]byte
	for _, w := range []string{"token", "secret", "pass", "key", "auth", "credential", "cookie", "bearer", "basic"} {
		out = append(out, []byte(w), []byte(strings.ToUpper(w)), []byte(strings.ToUpper(w[:1])+w[1:]))
	}
	// PAT counts only as a name component next to "_" (GH_PAT, gh_pat), so
	// lines with "path" or "pattern" are not hinted by it.
	for _, w := range []string{"_pat", "pat_"} {
		out = append(out, []byte(w), []byte(strings.ToUpper(w)), []byte(strings.Replace(w, "p", "P", 1)))
	}
	return append(out, []byte("://"))
}()

func hinted(line []byte) bool {
	for _, h := range hints {
		if bytes.Contains(line, h) {
			return true
		}
	}
	return false
}

// Line returns line with secrets masked. Names stay, so a reader still sees
// that a secret was set.
func (r *Redactor) Line(line []byte) []byte {
	if r != nil {
		for _, k := range r.known {
			if bytes.Contains(line, k) {
				line = bytes.ReplaceAll(line, k, []byte(Mask))
			}
		}
	}
	if !hinted(line) {
		return line
	}
	line = bearer.ReplaceAll(line, []byte("${1} "+Mask))
	line = urlCred.ReplaceAll(line, []byte("${1}"+Mask+"@"))
	line = flag.ReplaceAllFunc(line, func(m []byte) []byte {
		sub := flag.FindSubmatch(m)
		if bytes.HasPrefix(sub[3], []byte("-")) || isMasked(sub[3]) {
			return m // the next flag, not a value; or done already
		}
		return append(append(append([]byte{}, sub[1]...), sub[2]...), quoted(sub[3])...)
	})
	return assign.ReplaceAllFunc(line, func(m []byte) []byte {
		sub := assign.FindSubmatch(m)
		v := sub[3]
		// "Authorization: Bearer [REDACTED]" is masked already.
		if bytes.EqualFold(v, []byte("bearer")) || bytes.EqualFold(v, []byte("basic")) || isMasked(v) || notSecret(string(sub[1])) {
			return m
		}
		return append(append(append([]byte{}, sub[1]...), sub[2]...), quoted(v)...)
	})
}

func isMasked(v []byte) bool {
	v = bytes.Trim(v, `'"`)
	return bytes.HasPrefix([]byte(Mask), v) || bytes.HasPrefix(v, []byte(Mask))
}

// String is Line for a string: a command line or a "NAME=value" word.
func (r *Redactor) String(s string) string { return string(r.Line([]byte(s))) }

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
		out[k] = v
	}
	return out
}

// Line masks the patterns in line (no known values).
func Line(line []byte) []byte { return (*Redactor)(nil).Line(line) }

// String masks the patterns in s (no known values).
func String(s string) string { return (*Redactor)(nil).String(s) }

// Copy copies src to dst line by line through r, masking secrets, and
// returns the bytes read. Lines of any length are handled.
func (r *Redactor) Copy(dst io.Writer, src io.Reader) (int64, error) {
	w := r.NewWriter(dst)
	n, err := io.Copy(w, src)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// Writer masks secrets in what is written through it, a line at a time.
// Close flushes a last line without a newline; it does not close the
// underlying writer.
type Writer struct {
	r       *Redactor
	dst     *bufio.Writer
	pending []byte
}

// NewWriter returns a Writer that writes masked lines to dst.
func (r *Redactor) NewWriter(dst io.Writer) *Writer {
	return &Writer{r: r, dst: bufio.NewWriterSize(dst, 64<<10)}
}

// maxPending bounds the bytes held while waiting for a newline: a line
// longer than this is masked and written in pieces (a secret split across
// the cut could escape, but such lines are tool dumps, not env lines).
const maxPending = 1 << 20

// Write masks complete lines and keeps the rest for the next call.
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.pending = append(w.pending, p...)
			if len(w.pending) > maxPending {
				if _, err := w.dst.Write(w.r.Line(w.pending)); err != nil {
					return 0, err
				}
				w.pending = w.pending[:0]
			}
			break
		}
		line := p[:i+1]
		if len(w.pending) > 0 {
			line = append(w.pending, line...)
			w.pending = w.pending[:0]
		}
		if _, err := w.dst.Write(w.r.Line(line)); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	// Complete lines reach the file now, not when 64 KiB have gathered:
	// a hung or killed run keeps what its step printed (the buffer only
	// joins the lines of one read).
	if err := w.dst.Flush(); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes what is buffered, without waiting for a newline.
func (w *Writer) Flush() error {
	if len(w.pending) > 0 {
		if _, err := w.dst.Write(w.r.Line(w.pending)); err != nil {
			return err
		}
		w.pending = w.pending[:0]
	}
	return w.dst.Flush()
}

// Close flushes; the underlying writer stays open.
func (w *Writer) Close() error { return w.Flush() }
