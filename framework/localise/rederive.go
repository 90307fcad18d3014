package localise

import (
	"fmt"
	"slices"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Rederive is what a localisation records of one of its runs, made again
// from that run's test t (its raw outputs judged again) the way the
// localiser made it: the status, the figure (the lowest series peak of
// the bandwidth metric s judges, FigureName "peak NAME", Unit), and,
// against the reference recorded (sub.Reference) and tolerance tol, Slow
// and Why. Round, hosts, HCAs, folder and reference are sub's. verify
// compares it with the run recorded, so that a figure or a verdict edited
// in the journal is caught.
func Rederive(s *sku.SKU, t result.Test, sub result.SubRun, tol float64) result.SubRun {
	out := result.SubRun{Round: sub.Round, Test: sub.Test, Hosts: sub.Hosts, NICs: sub.NICs, Status: t.Status,
		Reference: sub.Reference, Dir: sub.Dir, NICFigures: sub.NICFigures}
	if v, name, unit, ok := figure(s, t); ok {
		out.Figure, out.FigureName, out.Unit = v, "peak "+name, unit
	}
	if why := failure(t); why != "" {
		out.Slow, out.Why = t.Status == result.Fail, string(t.Status)+": "+why
		return out
	}
	if ref := sub.Reference; out.Figure > 0 && ref > 0 && out.Figure < (1-tol)*ref {
		out.Slow = true
		out.Why = fmt.Sprintf("%s %s is %.0f%% below the reference %s", out.FigureName, fmtFig(out.Figure, out.Unit), 100*(1-out.Figure/ref), fmtFig(ref, out.Unit))
	}
	return out
}

// Reference is the reference the localiser compares the runs of one group
// with when no figure is given: the upper quartile of their figures above
// 0 (0 when none). A per-node stage groups its runs by test, a pairs
// stage takes all its runs as one group.
func Reference(runs []result.SubRun) float64 {
	var figs []float64
	for _, r := range runs {
		if r.Figure > 0 {
			figs = append(figs, r.Figure)
		}
	}
	return upperQuartile(figs)
}

// NodeSuspects are the hosts the localiser names as node suspects from
// the runs of stage st, re-derived from the runs' Slow as recorded (each
// checked by Rederive): for "per-node", every node with a slow run unless
// every node of hosts is slow; for "pairs" of strategy Pairs, every node
// in 2 runs or more, all slow, unless that is every node that ran. Other
// stages and strategies give nil with known false.
func NodeSuspects(st result.Stage, strategy string, hosts []string) (names []string, known bool) {
	switch {
	case st.Name == "per-node":
		slow := map[string]bool{}
		for _, r := range st.Runs {
			if r.Slow && len(r.Hosts) > 0 {
				slow[r.Hosts[0]] = true
			}
		}
		if len(slow) == len(hosts) && len(hosts) > 1 {
			return nil, true
		}
		for _, h := range hosts {
			if slow[h] {
				names = append(names, h)
			}
		}
		return names, true
	case st.Name == "pairs" && strategy == Pairs:
		runs, slow := map[string]int{}, map[string]int{}
		for _, r := range st.Runs {
			if r.Status == result.Error {
				continue // as tally: a run that could not run says nothing
			}
			for _, h := range r.Hosts {
				runs[h]++
				if r.Slow {
					slow[h]++
				}
			}
		}
		for _, h := range hosts {
			if runs[h] >= 2 && slow[h] == runs[h] {
				names = append(names, h)
			}
		}
		if len(names) > 0 && len(names) == len(runs) {
			return nil, true
		}
		return slices.Clip(names), true
	}
	return nil, false
}
