// Package redact removes secrets from raw outputs before anything is written
// to a results folder: values of environment variables whose names say they
// are secrets (nccl-tests' -J JSON dumps the whole environment, mpirun and
// shells echo it) and bearer tokens.
package redact

import (
	"bufio"
	"bytes"
	"io"
	"regexp"
	"strings"
)

// Mask replaces a redacted value.
const Mask = "[REDACTED]"

// secretName matches variable names that hold secrets: ..._TOKEN,
// ..._SECRET..., PASSWORD, API_KEY, PRIVATE_KEY, CREDENTIALS, AUTH...
var secretAssign = regexp.MustCompile(`(?i)\b([A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH)[A-Z0-9_]*)(\s*[=:]\s*)("?)([^\s",'}\]]+)`)

var bearer = regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`)

// quick rejects lines that cannot hold a secret without running the regexes.
var hints = [][]byte{[]byte("oken"), []byte("OKEN"), []byte("ecret"), []byte("ECRET"), []byte("ass"), []byte("ASS"),
	[]byte("key"), []byte("KEY"), []byte("Key"), []byte("uth"), []byte("UTH"), []byte("redential"), []byte("REDENTIAL"),
	[]byte("earer"), []byte("EARER"), []byte("asic"), []byte("ASIC")}

// Line returns line with secret values masked. The variable name stays, so
// a reader still sees that it was set.
func Line(line []byte) []byte {
	hit := false
	for _, h := range hints {
		if bytes.Contains(line, h) {
			hit = true
			break
		}
	}
	if !hit {
		return line
	}
	line = bearer.ReplaceAll(line, []byte("${1} "+Mask))
	return secretAssign.ReplaceAllFunc(line, func(m []byte) []byte {
		sub := secretAssign.FindSubmatch(m)
		v := string(sub[4])
		// "Authorization: Bearer [REDACTED]" is already masked.
		if strings.EqualFold(v, "bearer") || strings.EqualFold(v, "basic") || strings.HasPrefix(Mask, v) {
			return m
		}
		out := append([]byte{}, sub[1]...)
		out = append(out, sub[2]...)
		out = append(out, sub[3]...)
		return append(out, Mask...)
	})
}

// String is Line for a string: a command line or a "NAME=value" word.
func String(s string) string { return string(Line([]byte(s))) }

// Params returns a copy of params with the values of secret-looking keys
// masked ("env.HF_TOKEN", "password"), for results that record them.
func Params(params map[string]string) map[string]string {
	if params == nil {
		return nil
	}
	out := make(map[string]string, len(params))
	for k, v := range params {
		name := k
		if i := strings.LastIndexByte(k, '.'); i >= 0 {
			name = k[i+1:]
		}
		if masked := String(name + "=" + v); masked != name+"="+v {
			v = Mask
		}
		out[k] = v
	}
	return out
}

// Copy copies src to dst line by line, masking secrets. It returns the bytes
// written. Lines of any length are handled.
func Copy(dst io.Writer, src io.Reader) (int64, error) {
	w := NewWriter(dst)
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
	dst     *bufio.Writer
	pending []byte
}

// NewWriter returns a Writer that writes masked lines to dst.
func NewWriter(dst io.Writer) *Writer { return &Writer{dst: bufio.NewWriterSize(dst, 64<<10)} }

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
				if _, err := w.dst.Write(Line(w.pending)); err != nil {
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
		if _, err := w.dst.Write(Line(line)); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	return n, nil
}

// Flush writes what is buffered, without waiting for a newline.
func (w *Writer) Flush() error {
	if len(w.pending) > 0 {
		if _, err := w.dst.Write(Line(w.pending)); err != nil {
			return err
		}
		w.pending = w.pending[:0]
	}
	return w.dst.Flush()
}

// Close flushes; the underlying writer stays open.
func (w *Writer) Close() error { return w.Flush() }
