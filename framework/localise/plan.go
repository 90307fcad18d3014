package localise

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/schedule"
)

// Schedule is the part of a localisation that is known before anything
// runs, for --dry-run: the per-node runs, and the node-pair rounds of the
// Pairs and Matching strategies (the re-pairing, the bisection below its
// first level and the nic-pairs stage depend on results).
type Schedule struct {
	Test     string
	Hosts    []string
	Strategy string
	// PerNode is the single-node suite run on every node ("" none).
	PerNode string
	// Rounds are the node-pair rounds, as indices into Hosts.
	Rounds []schedule.Round
	// Halves are the two halves of the first bisection level.
	Halves [2][]string
	// Depth is the most bisection levels.
	Depth int
	// HCAMap is the test's HCA map when it takes one.
	HCAMap string
	// NICRounds are the HCA pair maps of the nic-pairs stage's rounds
	// (over --nics when given, else the sides of HCAMap), as each examined
	// node pair runs them; empty with NICNote saying why when the stage
	// would compare nothing.
	NICRounds []string
	// NICsGiven says the rounds are over --nics, not the test's map.
	NICsGiven bool
	NICNote   string
	// Seed is the seed of the random matchings.
	Seed uint64
}

// Schedule computes what c would run first for test on hosts. It is the
// planning whose cost grows with the node count: for 1024 nodes and every
// pair it holds 523,776 pairs (see BenchmarkSchedule1024).
func (c *Config) Schedule(test string, hosts []string) Schedule {
	var err error
	n := len(hosts)
	s := Schedule{Test: test, Hosts: hosts, Strategy: c.StrategyFor(n), PerNode: c.NodeSuite, Seed: c.Seed}
	if c.HCAMap != nil {
		if m, ok := c.HCAMap(test); ok {
			s.HCAMap, s.NICsGiven = m.Map, len(c.NICs) > 0
			servers, clients := c.nicSides(m)
			if len(servers) < 2 || len(servers) != len(clients) {
				s.NICNote = fmt.Sprintf("the HCA map %q names %d server and %d client HCAs; give every node's HCAs (--nics) to compare them pair by pair", m.Map, len(servers), len(clients))
			} else if s.NICRounds, err = nicRounds(servers, clients); err != nil {
				s.NICNote = err.Error()
			}
		}
	}
	if n < 3 {
		return s
	}
	switch s.Strategy {
	case Pairs:
		s.Rounds = schedule.RoundRobin(n)
	case Matching:
		s.Rounds = schedule.Matchings(n, c.matchings(), rand.New(rand.NewPCG(c.Seed, uint64(n))))
	case Bisect:
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		a, b := schedule.Halves(idx)
		s.Halves = [2][]string{pick(hosts, a), pick(hosts, b)}
		s.Depth = schedule.Depth(n)
	}
	return s
}

// Write renders the schedule for people, one round per line; at most
// maxRounds rounds are listed (0: all), the rest counted.
func (s Schedule) Write(w io.Writer, maxRounds int) error {
	var b strings.Builder
	n := len(s.Hosts)
	fmt.Fprintf(&b, "# localise %s on %d nodes (%s)\n", s.Test, n, s.Strategy)
	if n < 2 {
		fmt.Fprintf(&b, "  nothing to localise unless the hosts are known: --hosts (ssh, slurm), or the nodes a Slurm job reports\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	if s.PerNode != "" {
		nodes := strings.Join(s.Hosts, " ")
		if n > 16 {
			nodes = span(s.Hosts)
		}
		fmt.Fprintf(&b, "  per-node: suite %s on each node at once: %s\n", s.PerNode, nodes)
	}
	switch {
	case n == 2:
		fmt.Fprintf(&b, "  pairs: none (2 nodes are one pair, the run itself)\n")
	case s.Strategy == Bisect:
		fmt.Fprintf(&b, "  bisect level 1: %s | %s; then the halves that stay slow, about %s, then their last nodes beside known-good ones\n",
			span(s.Halves[0]), span(s.Halves[1]), plural(s.Depth, "level"))
	default:
		per := 0
		if len(s.Rounds) > 0 {
			per = len(s.Rounds[0])
		}
		how := "every pair"
		if s.Strategy == Matching {
			how = fmt.Sprintf("random matchings, seed %d", s.Seed)
		}
		fmt.Fprintf(&b, "  pairs: %s of %s (%s)\n", plural(len(s.Rounds), "round"), plural(per, "pair"), how)
		for r, round := range s.Rounds {
			if maxRounds > 0 && r == maxRounds {
				fmt.Fprintf(&b, "    ... %s more\n", plural(len(s.Rounds)-r, "round"))
				break
			}
			parts := make([]string, len(round))
			for i, p := range round {
				parts[i] = s.Hosts[p.A] + "+" + s.Hosts[p.B]
			}
			fmt.Fprintf(&b, "    round %d: %s\n", r+1, strings.Join(parts, " "))
		}
		if s.Strategy == Matching {
			fmt.Fprintf(&b, "  re-pair: the nodes slow in every matching, each beside a node of a pair that ran at speed\n")
		}
	}
	switch {
	case s.NICNote != "":
		fmt.Fprintf(&b, "  nic-pairs: none: %s\n", s.NICNote)
	case len(s.NICRounds) > 0:
		from := "the test's map: " + s.HCAMap
		if s.NICsGiven {
			from = "the HCAs of --nics"
		}
		fmt.Fprintf(&b, "  nic-pairs: every HCA pair of the examined node pairs (%s), %s:\n", from, plural(len(s.NICRounds), "round"))
		for r, m := range s.NICRounds {
			if maxRounds > 0 && r == maxRounds {
				fmt.Fprintf(&b, "    ... %s more\n", plural(len(s.NICRounds)-r, "round"))
				break
			}
			fmt.Fprintf(&b, "    round %d: %s\n", r+1, m)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural renders a count with its noun: "1 round", "3 rounds".
func plural(n int, noun string) string { return result.Count(n, noun) }
