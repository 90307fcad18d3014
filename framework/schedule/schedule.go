// Package schedule computes which nodes (or HCAs) run together when a
// localisation narrows a slow multi-node test down: every pair in
// round-robin rounds, random matchings, the re-pairing of suspects with
// known-good nodes, halves for bisection, and the rounds that cover every
// HCA pair between two nodes. It is pure arithmetic on indices; what runs
// and how it is judged is the localise package's business.
package schedule

import (
	"fmt"
	"math/rand/v2"
)

// Pair is two indices that run together: node indices into a host list
// (A < B), or for HCA rounds the server HCA index A and the client HCA index
// B.
type Pair struct{ A, B int }

// Round is a set of pairs that run at the same time; no index appears twice
// in a round, so the pairs share no node.
type Round []Pair

// RoundRobin is the circle method's schedule of every pair of n nodes:
// n-1 rounds of n/2 disjoint pairs when n is even; when n is odd, n rounds
// of (n-1)/2 pairs, one node sitting each round out. Every pair appears in
// exactly one round. Fewer than 2 nodes: no rounds. Time and memory are
// O(n²) (523,776 pairs for 1024 nodes).
func RoundRobin(n int) []Round {
	if n < 2 {
		return nil
	}
	// Circle method: slot 0 stays, the others rotate; with odd n a virtual
	// node m-1 = n is the bye.
	m := n
	if m%2 == 1 {
		m++
	}
	rounds := make([]Round, m-1)
	pairs := make([]Pair, (m-1)*(m/2))
	ring := make([]int, m)
	for i := range ring {
		ring[i] = i
	}
	for r := 0; r < m-1; r++ {
		start := r * (m / 2)
		round := pairs[start : start : start+m/2]
		for i := 0; i < m/2; i++ {
			a, b := ring[i], ring[m-1-i]
			if a >= n || b >= n {
				continue
			}
			if a > b {
				a, b = b, a
			}
			round = append(round, Pair{a, b})
		}
		rounds[r] = round
		// Rotate ring[1:] by one to the right.
		last := ring[m-1]
		copy(ring[2:], ring[1:m-1])
		ring[1] = last
	}
	return rounds
}

// matchingTries is how many shuffles Matchings draws per round to find one
// that repeats no earlier pair.
const matchingTries = 32

// Matchings draws k random perfect matchings of n nodes from rng, the
// sampling large operators use instead of every pair: each round pairs
// every node once (with odd n one node sits out, a different one each round
// while k <= n). A round repeats as few pairs of earlier rounds as
// matchingTries draws can manage (none, unless n is small: 4 nodes have
// only 3 matchings). Fewer than 2 nodes or k < 1: no rounds. O(k·n).
func Matchings(n, k int, rng *rand.Rand) []Round {
	if n < 2 || k < 1 {
		return nil
	}
	rounds := make([]Round, k)
	seen := map[Pair]bool{}
	for r := range rounds {
		var best Round
		bestRepeats := -1
		for try := 0; try < matchingTries && bestRepeats != 0; try++ {
			round := matching(n, r, rng)
			repeats := 0
			for _, p := range round {
				if seen[p] {
					repeats++
				}
			}
			if bestRepeats < 0 || repeats < bestRepeats {
				best, bestRepeats = round, repeats
			}
		}
		for _, p := range best {
			seen[p] = true
		}
		rounds[r] = best
	}
	return rounds
}

// matching draws one random perfect matching of n nodes; with odd n, node
// r mod n sits out.
func matching(n, r int, rng *rand.Rand) Round {
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	if n%2 == 1 {
		// Sit node r mod n out: move it to the end.
		out := r % n
		for i, v := range perm {
			if v == out {
				perm[i], perm[n-1] = perm[n-1], perm[i]
				break
			}
		}
	}
	round := make(Round, 0, n/2)
	for i := 0; i+1 < n; i += 2 {
		a, b := perm[i], perm[i+1]
		if a > b {
			a, b = b, a
		}
		round = append(round, Pair{a, b})
	}
	return round
}

// Repair pairs every suspect with a known-good node, each good node with at
// most one suspect per round, in as few rounds as the good nodes allow
// (ceil(len(suspects)/len(good))). Pairs keep the suspect as A and the good
// node as B. No good node: no rounds (nothing to compare with).
func Repair(suspects, good []int) []Round {
	if len(good) == 0 || len(suspects) == 0 {
		return nil
	}
	var rounds []Round
	for i := 0; i < len(suspects); i += len(good) {
		end := min(i+len(good), len(suspects))
		round := make(Round, 0, end-i)
		for j, s := range suspects[i:end] {
			round = append(round, Pair{s, good[j]})
		}
		rounds = append(rounds, round)
	}
	return rounds
}

// Halves splits a node set for bisection: the first ceil(n/2) nodes and
// the rest, in the order given.
func Halves(set []int) (a, b []int) {
	h := (len(set) + 1) / 2
	return set[:h:h], set[h:]
}

// HCARounds covers every (server HCA, client HCA) pair between two nodes of
// m HCAs each in m rounds of m pairs: round r pairs server HCA i with client
// HCA (i+r) mod m, so every HCA carries one stream per round and a bad port
// or cable shows as a slow row (server side) or column (client side).
// Errors: m < 1.
func HCARounds(m int) ([]Round, error) {
	if m < 1 {
		return nil, fmt.Errorf("HCA rounds of %d HCAs: want at least 1", m)
	}
	rounds := make([]Round, m)
	for r := range rounds {
		round := make(Round, m)
		for i := range round {
			round[i] = Pair{i, (i + r) % m}
		}
		rounds[r] = round
	}
	return rounds, nil
}

// Depth is the number of bisection levels that bring n nodes down to sets
// of at most 3 (the sets that are then re-paired with known-good nodes):
// O(log2 n).
func Depth(n int) int {
	d := 0
	for n > 3 {
		n = (n + 1) / 2
		d++
	}
	return d
}
