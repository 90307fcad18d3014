// Package hosts reads the node lists people already have: --hosts
// "node1,node2:8" (MPICH / mpirun -H form) and hostfiles in Open MPI form
// ("node1 slots=8"), MPICH form ("node1:8") or one name per line, with
// comments and blank lines. Names that are not host names are rejected, so
// nothing from a hostfile reaches a shell or a scheduler unchecked.
package hosts

import (
	"errors"
	"fmt"
	"strings"
)

// Host is one node and, when given, its slot count (processes it takes).
type Host struct {
	Name string
	// Slots is the count from "slots=N" or "host:N"; 0 when not given.
	Slots int
}

// ParseList parses a comma-separated --hosts value ("n1,n2:8").
func ParseList(s string) ([]Host, error) {
	var out []Host
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		h, err := parseWord(w)
		if err != nil {
			return nil, fmt.Errorf("--hosts: %w", err)
		}
		out = append(out, h)
	}
	return out, nil
}

// ParseFile parses a hostfile's content; name is the file's name for
// messages ("hosts.txt line 3: ...").
func ParseFile(data []byte, name string) ([]Host, error) {
	var out []Host
	for i, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		h, err := parseWord(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, i+1, err)
		}
		for _, extra := range f[1:] {
			k, v, ok := strings.Cut(extra, "=")
			switch {
			case ok && (k == "slots" || k == "max_slots" || k == "max-slots"):
				n, err := slots(v)
				if err != nil {
					return nil, fmt.Errorf("%s line %d: %w", name, i+1, err)
				}
				if k == "slots" {
					h.Slots = n
				}
			case ok && k == "port":
			default:
				return nil, fmt.Errorf("%s line %d: %q is not one of host, host:N, host slots=N", name, i+1, strings.TrimSpace(line))
			}
		}
		out = append(out, h)
	}
	return out, nil
}

func parseWord(w string) (Host, error) {
	if strings.Contains(w, "@") {
		// USER[:PASSWORD]@HOST: the word is not quoted back, lest an
		// error print the password (a hostfile is not masked as an
		// argument is).
		return Host{}, errors.New("a host entry with a user (USER[:PASSWORD]@HOST) is not supported: give the host name alone, and the user in ~/.ssh/config or --ssh-user")
	}
	name, n, hasSlots := strings.Cut(w, ":")
	if !Valid(name) {
		return Host{}, fmt.Errorf("host %q is not a host name", name)
	}
	h := Host{Name: name}
	if hasSlots {
		s, err := slots(n)
		if err != nil {
			return Host{}, fmt.Errorf("host %q: %w", w, err)
		}
		h.Slots = s
	}
	return h, nil
}

func slots(v string) (int, error) {
	n := 0
	for _, r := range v {
		if r < '0' || r > '9' || n > 1<<20 {
			return 0, fmt.Errorf("slot count %q is not a number", v)
		}
		n = n*10 + int(r-'0')
	}
	if v == "" || n == 0 {
		return 0, fmt.Errorf("slot count %q must be a positive number", v)
	}
	return n, nil
}

// Valid reports whether s is a host name or an IPv4 address (RFC 1123
// letters, digits, '-', '.', and '_' as clusters use it; not starting with
// '-', no empty label, at most 253 bytes): safe to pass to ssh, mpirun or a
// batch script.
func Valid(s string) bool {
	if s == "" || len(s) > 253 || s[0] == '-' || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return false
		}
	}
	return true
}

// Names returns the hosts' names.
func Names(hs []Host) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Name
	}
	return out
}
