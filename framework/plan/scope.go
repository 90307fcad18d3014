package plan

import (
	"fmt"
	"strconv"
	"strings"
)

// Scope is the shape of a run: how many nodes, and how many GPUs on each.
// It is the one type for it: the launchers' Topology embeds it, a SKU
// file's baseline entries are keyed by it, and results.json and
// journal.jsonl name it in its text form, "1x2" (one node, two GPUs).
//
// In JSON (and any other encoding that uses encoding.TextMarshaler) a Scope
// is its text form; the zero Scope, which names no run, is the empty text.
// SKU files write it as a mapping, {nodes: 1, gpus_per_node: 2}: package
// sku decodes that itself, as it decodes every field of the file.
type Scope struct {
	// Nodes is the number of nodes (>= 1 in a valid scope).
	Nodes int
	// GPUsPerNode is the number of GPUs used on each node (>= 1 in a valid
	// scope).
	GPUsPerNode int
}

// Ranks is the total number of GPUs (ranks in the nccl-tests sense):
// Nodes × GPUsPerNode.
func (s Scope) Ranks() int { return s.Nodes * s.GPUsPerNode }

// String renders the scope the way reports and baselines name it: "1x2" is
// one node with two GPUs. The zero Scope renders as "0x0".
func (s Scope) String() string { return fmt.Sprintf("%dx%d", s.Nodes, s.GPUsPerNode) }

// IsZero reports whether s is the zero Scope (no scope given).
func (s Scope) IsZero() bool { return s == Scope{} }

// Limits of a scope: far above any cluster (the largest hold about
// 100,000 GPUs, 8 to a node; a GB200 NVL72 rack is 72), low enough that
// Ranks fits an int32 (the plugin protocol's) with room to spare.
const (
	MaxNodes       = 1 << 17
	MaxGPUsPerNode = 1 << 10
)

// CheckCounts says whether nodes and GPUs per node make a scope: each at
// least 1 and at most MaxNodes and MaxGPUsPerNode. The error names which
// count is wrong and why ("nodes 0: want 1 to 131072"). It is the one
// check of the counts: ParseScope and Scope.Check use it.
func CheckCounts(nodes, gpusPerNode int) error {
	for _, c := range []struct {
		name   string
		n, max int
	}{{"nodes", nodes, MaxNodes}, {"GPUs per node", gpusPerNode, MaxGPUsPerNode}} {
		if c.n < 1 || c.n > c.max {
			return fmt.Errorf("%s %d: want 1 to %d", c.name, c.n, c.max)
		}
	}
	return nil
}

// Check is CheckCounts of the scope's counts.
func (s Scope) Check() error { return CheckCounts(s.Nodes, s.GPUsPerNode) }

// ParseScope reads a scope as String writes it ("2x8": nodes x GPUs per
// node, within CheckCounts, nothing else: no sign, no leading zero, no
// space). Errors name the text.
func ParseScope(text string) (Scope, error) {
	n, g, ok := strings.Cut(text, "x")
	nodes, err1 := strconv.Atoi(n)
	gpus, err2 := strconv.Atoi(g)
	s := Scope{Nodes: nodes, GPUsPerNode: gpus}
	if !ok || err1 != nil || err2 != nil || s.Check() != nil || s.String() != text {
		return Scope{}, fmt.Errorf("scope %q: want NODESxGPUS, e.g. 2x8", text)
	}
	return s, nil
}

// MarshalText writes String's form, or nothing for the zero Scope (a
// result that names no scope keeps naming none).
func (s Scope) MarshalText() ([]byte, error) {
	if s.IsZero() {
		return []byte{}, nil
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads what MarshalText writes: ParseScope's form, or the
// empty text for the zero Scope. Errors are ParseScope's.
func (s *Scope) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*s = Scope{}
		return nil
	}
	v, err := ParseScope(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
