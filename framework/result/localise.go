package result

import "fmt"

// Localisation is what gpuaccept found while narrowing down a multi-node
// test (one that failed, or any with --localise) to the node, HCA or link to
// pull: the runs it made on parts of the node set, stage by stage, and the
// suspects those runs name, each with its evidence.
type Localisation struct {
	// Test is the multi-node test localised ("rccl.all_reduce").
	Test string `json:"test"`
	// Hosts is the node set it ran on, in the order given.
	Hosts []string `json:"hosts"`
	// Reason is why it was localised: "failed" (the test failed or
	// errored) or "asked" (--localise, or the localise command).
	Reason string `json:"reason"`
	// Strategy is how node pairs were chosen: "pairs" (every pair, in
	// round-robin rounds), "matching" (random matchings and a re-pairing
	// of suspects with known-good nodes) or "bisect" (halving).
	Strategy string `json:"strategy"`
	// Tolerance is the fraction a run's figure may fall below the figure
	// it is compared with before the run counts as slow (0.1: 10%).
	Tolerance float64   `json:"tolerance"`
	Stages    []Stage   `json:"stages"`
	Suspects  []Suspect `json:"suspects"`
	// Notes say what the stages could not conclude ("2 nodes make one
	// pair: the pair stage has nothing to compare").
	Notes []string `json:"notes,omitempty"`
}

// Verdict is the localisation's own outcome: Fail when it names a
// suspect; else Error when it is Incomplete; else Pass.
func (l Localisation) Verdict() Status {
	switch {
	case len(l.Suspects) > 0:
		return Fail
	case l.Incomplete() != "":
		return Error
	}
	return Pass
}

// Incomplete says why a localisation could not speak of every node: it
// made no run, or some of its runs could not run or be parsed (a launcher
// that cannot reach a node, a bad parameter, an interruption): those count
// for nothing. "" when every run measured.
func (l Localisation) Incomplete() string {
	runs, errs := 0, 0
	for _, st := range l.Stages {
		for _, r := range st.Runs {
			runs++
			if r.Status == Error {
				errs++
			}
		}
	}
	switch {
	case runs == 0:
		return "the localisation made no run"
	case errs == 1 && runs == 1:
		return "its one run errored, so nothing could be compared"
	case errs == runs:
		return fmt.Sprintf("every run errored (%d runs), so nothing could be compared", runs)
	case errs > 0:
		return fmt.Sprintf("%d of %d runs could not run or be parsed and count for nothing", errs, runs)
	}
	return ""
}

// Stage is one step of a localisation: the runs it made, in rounds.
type Stage struct {
	// Name is "per-node" (the single-node suite on every node), "pairs",
	// "re-pair" (suspects with known-good nodes), "bisect" or "nic-pairs"
	// (every HCA pair between two nodes).
	Name string `json:"name"`
	// Rounds is how many rounds of concurrent runs the stage took.
	Rounds int      `json:"rounds"`
	Runs   []SubRun `json:"runs"`
}

// SubRun is one run a localisation made: one test (or the single-node
// suite) on a part of the node set.
type SubRun struct {
	// Round counts from 1 within its stage; runs of a round ran at once,
	// on disjoint nodes.
	Round int `json:"round"`
	// Test is the test run, or "suite SUITE" for a per-node run.
	Test  string   `json:"test"`
	Hosts []string `json:"hosts"`
	// NICs is the HCA map of a nic-pairs run, SERVER_HCA:CLIENT_HCA,...
	// (ibperf's pairs parameter).
	NICs   string `json:"nics,omitempty"`
	Status Status `json:"status"`
	// Figure is the number runs are compared by: the lowest, over the
	// test's series (placement, NIC pair, ...), of the peak over message
	// sizes of its bandwidth metric (FigureName, in Unit); 0 when the run
	// measured none.
	Figure     float64 `json:"figure"`
	FigureName string  `json:"figure_name,omitempty"`
	Unit       string  `json:"unit,omitempty"`
	// Reference is the figure this run was compared with (the median of
	// its stage's runs, or the better half of a bisection); 0 when none.
	Reference float64 `json:"reference,omitempty"`
	// Slow says the run counts against the nodes (or HCAs) in it: it
	// failed or errored against its baseline, or its figure fell more than
	// the tolerance below its reference.
	Slow bool `json:"slow"`
	// Why is the finding in words when Slow: the failing baseline check
	// or the comparison.
	Why string `json:"why,omitempty"`
	// Dir is the run's own results folder, relative to the main one.
	Dir string `json:"dir,omitempty"`
	// NICFigures are the figures of each HCA pair of a nic-pairs run that
	// measured several pairs at once (NICs "S:C,S:C"), in NICs order, so
	// reports can show the server-HCA x client-HCA matrix per pair; empty
	// when the run measured one pair (Figure is then that pair's) or the
	// localiser did not split the figure.
	NICFigures []NICFigure `json:"nic_figures,omitempty"`
}

// NICFigure is the figure of one HCA pair within a nic-pairs SubRun: the
// peak over message sizes of the pair's bandwidth (the run's FigureName,
// in its Unit, Gb/s for ib_write_bw).
type NICFigure struct {
	// Server and Client are the HCAs ("mlx5_2") on the run's first and
	// second host.
	Server string  `json:"server"`
	Client string  `json:"client"`
	Figure float64 `json:"figure"`
	// Slow says this pair's figure fell more than the tolerance below the
	// run's Reference.
	Slow bool `json:"slow"`
}

// Suspect is a part a localisation names as the cause.
type Suspect struct {
	// Kind is "node", "hca" (one HCA or its cable/port) or "link" (one
	// HCA pair between two nodes, neither HCA slow with other peers).
	Kind string `json:"kind"`
	Host string `json:"host"`
	// HCA is the HCA of Host, for kinds hca and link.
	HCA string `json:"hca,omitempty"`
	// Peer is the other end of a link, "HOST:HCA".
	Peer string `json:"peer,omitempty"`
	// Stage is the stage that named it.
	Stage string `json:"stage"`
	// Reason says in one line why it is named.
	Reason string `json:"reason"`
	// Evidence lists the runs that name it: which hosts, which numbers,
	// which folder.
	Evidence []string `json:"evidence"`
}

// Name renders the suspect for tables and test names: "n3", "n3 HCA
// mlx5_2", "n3:mlx5_2 <-> n4:mlx5_5".
func (s Suspect) Name() string {
	switch s.Kind {
	case "hca":
		return s.Host + " HCA " + s.HCA
	case "link":
		return s.Host + ":" + s.HCA + " <-> " + s.Peer
	}
	return s.Host
}
