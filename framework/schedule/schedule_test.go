package schedule

import (
	"math/rand/v2"
	"testing"

	"gotest.tools/v3/assert"
)

// covers checks that rounds are disjoint and returns how often each pair
// appears.
func covers(t *testing.T, rounds []Round, n int) map[Pair]int {
	t.Helper()
	seen := map[Pair]int{}
	for r, round := range rounds {
		used := map[int]bool{}
		for _, p := range round {
			assert.Assert(t, p.A >= 0 && p.B < n && p.A < p.B, "round %d: pair %v out of range for %d nodes", r, p, n)
			assert.Assert(t, !used[p.A] && !used[p.B], "round %d: node of %v used twice", r, p)
			used[p.A], used[p.B] = true, true
			seen[p]++
		}
	}
	return seen
}

func TestRoundRobinEveryPairOnce(t *testing.T) {
	for _, tc := range []struct{ n, rounds, perRound int }{
		{0, 0, 0}, {1, 0, 0}, {2, 1, 1}, {3, 3, 1}, {4, 3, 2}, {5, 5, 2}, {16, 15, 8}, {17, 17, 8}, {64, 63, 32},
	} {
		rounds := RoundRobin(tc.n)
		assert.Equal(t, len(rounds), tc.rounds, "n=%d", tc.n)
		for _, r := range rounds {
			assert.Equal(t, len(r), tc.perRound, "n=%d", tc.n)
		}
		seen := covers(t, rounds, tc.n)
		assert.Equal(t, len(seen), tc.n*(tc.n-1)/2, "n=%d: distinct pairs", tc.n)
		for p, c := range seen {
			assert.Equal(t, c, 1, "n=%d: pair %v", tc.n, p)
		}
	}
}

func TestMatchingsArePerfect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, k int }{{2, 1}, {4, 3}, {7, 3}, {1024, 3}} {
		rounds := Matchings(tc.n, tc.k, rng)
		assert.Equal(t, len(rounds), tc.k)
		covers(t, rounds, tc.n)
		out := map[int]bool{}
		for r, round := range rounds {
			assert.Equal(t, len(round), tc.n/2, "n=%d round %d", tc.n, r)
			if tc.n%2 == 1 {
				in := map[int]bool{}
				for _, p := range round {
					in[p.A], in[p.B] = true, true
				}
				for i := 0; i < tc.n; i++ {
					if !in[i] {
						out[i] = true
					}
				}
			}
		}
		if tc.n%2 == 1 {
			assert.Equal(t, len(out), tc.k, "a different node sits out each round")
		}
	}
	assert.Assert(t, Matchings(1, 3, rng) == nil)
	assert.Assert(t, Matchings(8, 0, rng) == nil)
}

// Small node sets have few matchings: rounds still avoid repeating pairs
// while one that does not exists (4 nodes: 3 matchings, 3 rounds, 6
// distinct pairs).
func TestMatchingsAvoidRepeats(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		rounds := Matchings(4, 3, rand.New(rand.NewPCG(seed, 4)))
		assert.Equal(t, len(covers(t, rounds, 4)), 6, "seed %d: %v", seed, rounds)
		rounds = Matchings(64, 3, rand.New(rand.NewPCG(seed, 64)))
		assert.Equal(t, len(covers(t, rounds, 64)), 96, "seed %d", seed)
	}
}

func TestMatchingsDependOnSeed(t *testing.T) {
	a := Matchings(64, 1, rand.New(rand.NewPCG(1, 1)))
	b := Matchings(64, 1, rand.New(rand.NewPCG(1, 1)))
	c := Matchings(64, 1, rand.New(rand.NewPCG(2, 1)))
	assert.DeepEqual(t, a, b)
	assert.Assert(t, len(a[0]) == len(c[0]))
	differ := false
	for i := range a[0] {
		differ = differ || a[0][i] != c[0][i]
	}
	assert.Assert(t, differ, "another seed gave the same matching")
}

func TestRepair(t *testing.T) {
	for _, tc := range []struct {
		name           string
		suspects, good []int
		want           []Round
	}{
		{"one good node serves two suspects in turn", []int{5, 7}, []int{0}, []Round{{{5, 0}}, {{7, 0}}}},
		{"enough good nodes: one round", []int{5, 7}, []int{0, 1, 2}, []Round{{{5, 0}, {7, 1}}}},
		{"no good node", []int{5}, nil, nil},
		{"no suspect", nil, []int{1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, Repair(tc.suspects, tc.good), tc.want)
		})
	}
}

func TestHalvesAndDepth(t *testing.T) {
	a, b := Halves([]int{1, 2, 3, 4, 5})
	assert.DeepEqual(t, a, []int{1, 2, 3})
	assert.DeepEqual(t, b, []int{4, 5})
	grown := append(a, 9) // must not overwrite b
	assert.DeepEqual(t, grown, []int{1, 2, 3, 9})
	assert.DeepEqual(t, b, []int{4, 5})
	for _, tc := range []struct{ n, depth int }{{2, 0}, {3, 0}, {4, 1}, {7, 2}, {8, 2}, {16, 3}, {1024, 9}} {
		assert.Equal(t, Depth(tc.n), tc.depth, "n=%d", tc.n)
	}
}

func TestHCARoundsCoverTheMatrix(t *testing.T) {
	rounds, err := HCARounds(8)
	assert.NilError(t, err)
	assert.Equal(t, len(rounds), 8)
	seen := map[Pair]bool{}
	for r, round := range rounds {
		srv, cli := map[int]bool{}, map[int]bool{}
		for _, p := range round {
			assert.Assert(t, !srv[p.A] && !cli[p.B], "round %d uses an HCA twice", r)
			srv[p.A], cli[p.B] = true, true
			assert.Assert(t, !seen[p], "pair %v twice", p)
			seen[p] = true
		}
	}
	assert.Equal(t, len(seen), 64)
	_, err = HCARounds(0)
	assert.ErrorContains(t, err, "want at least 1")
}

// The target: the schedule of 1024 nodes "in well under a second".
// go test -bench . ./framework/schedule prints ns/op: RoundRobin(1024),
// 1023 rounds of 512 pairs, took about 2 ms on the 2-core development
// machine.
func BenchmarkRoundRobin1024(b *testing.B) {
	for b.Loop() {
		if len(RoundRobin(1024)) != 1023 {
			b.Fatal("wrong round count")
		}
	}
}

func BenchmarkMatchings1024(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		if len(Matchings(1024, 3, rng)) != 3 {
			b.Fatal("wrong round count")
		}
	}
}

func BenchmarkHCARounds8(b *testing.B) {
	for b.Loop() {
		if _, err := HCARounds(8); err != nil {
			b.Fatal(err)
		}
	}
}
