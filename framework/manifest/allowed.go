package manifest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// allowedSigner is one line of an allowed signers file (ssh-keygen(1),
// ALLOWED SIGNERS): principals [options] keytype base64-key [comment].
type allowedSigner struct {
	line          int
	principals    []string
	key           ssh.PublicKey
	certAuthority bool
	namespaces    []string // nil: any
	after, before time.Time
}

func (a *allowedSigner) namespaceOK(ns string) bool {
	return a.namespaces == nil || matchList(a.namespaces, ns)
}

func (a *allowedSigner) validAt(t time.Time) bool {
	return (a.after.IsZero() || !t.Before(a.after)) && (a.before.IsZero() || t.Before(a.before))
}

// readAllowedSigners parses the allowed signers file p. Errors name the
// file and line.
func readAllowedSigners(p string) ([]allowedSigner, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read allowed signers: %w", err)
	}
	var out []allowedSigner
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, err := parseAllowedSigner(line)
		if err != nil {
			return nil, fmt.Errorf("allowed signers %s line %d: %w", p, n, err)
		}
		a.line = n
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read allowed signers %s: %w", p, err)
	}
	return out, nil
}

func parseAllowedSigner(line string) (allowedSigner, error) {
	var a allowedSigner
	var principals, rest string
	if strings.HasPrefix(line, `"`) {
		end := strings.Index(line[1:], `"`)
		if end < 0 {
			return a, fmt.Errorf("principals: unterminated quote")
		}
		principals, rest = line[1:end+1], line[end+2:]
	} else {
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return a, fmt.Errorf("want principals, then the key")
		}
		principals, rest = line[:i], line[i:]
	}
	a.principals = strings.Split(principals, ",")
	// The rest is an authorized_keys line: [options] keytype key [comment].
	key, _, options, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(rest)))
	if err != nil {
		return a, fmt.Errorf("key: %w", err)
	}
	a.key = key
	for _, o := range options {
		name, value, hasValue := strings.Cut(o, "=")
		value = strings.Trim(value, `"`)
		switch strings.ToLower(name) {
		case "cert-authority":
			a.certAuthority = true
		case "namespaces":
			if !hasValue {
				return a, fmt.Errorf("namespaces: want namespaces=\"LIST\"")
			}
			a.namespaces = strings.Split(value, ",")
		case "valid-after", "valid-before":
			t, err := sshTime(value)
			if err != nil {
				return a, fmt.Errorf("%s: %w", name, err)
			}
			if strings.EqualFold(name, "valid-after") {
				a.after = t
			} else {
				a.before = t
			}
		default:
			return a, fmt.Errorf("unknown option %q", name)
		}
	}
	return a, nil
}

// sshTime parses the timestamps of allowed signers: YYYYMMDD,
// YYYYMMDDHHMM or YYYYMMDDHHMMSS, in local time or, with a Z, in UTC.
func sshTime(s string) (time.Time, error) {
	loc := time.Local
	if strings.HasSuffix(s, "Z") || strings.HasSuffix(s, "z") {
		s, loc = s[:len(s)-1], time.UTC
	}
	for _, layout := range []string{"20060102", "200601021504", "20060102150405"} {
		if len(s) == len(layout) {
			if t, err := time.ParseInLocation(layout, s, loc); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("%q: want YYYYMMDD[HHMM[SS]][Z]", s)
}

// matchList matches s against a comma-separated pattern list as OpenSSH
// does (match_pattern_list): a pattern starting with ! that matches
// refuses s whatever else matches; otherwise any matching pattern accepts.
func matchList(patterns []string, s string) bool {
	ok := false
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if neg, found := strings.CutPrefix(p, "!"); found {
			if wildcard(neg, s) {
				return false
			}
			continue
		}
		if wildcard(p, s) {
			ok = true
		}
	}
	return ok
}

// wildcard matches s against p, where * is any run of characters and ?
// any one character.
func wildcard(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for p = p[1:]; len(p) > 0 && p[0] == '*'; p = p[1:] {
			}
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if wildcard(p, s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			p, s = p[1:], s[1:]
		default:
			if s == "" || p[0] != s[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return s == ""
}
