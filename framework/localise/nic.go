package localise

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/schedule"
)

// maxNICNodePairs bounds how many node pairs the nic-pairs stage examines:
// each takes as many rounds as a node has HCAs.
const maxNICNodePairs = 4

// hcaSides splits an HCA map "S:C,S:C" into its server and client HCAs, in
// order of first mention. A lone name pairs with itself, as ibperf's map
// takes it (mi355x's "ionic_0,ionic_1,...": every NIC with its namesake).
func hcaSides(m string) (servers, clients []string) {
	seenS, seenC := map[string]bool{}, map[string]bool{}
	for _, p := range strings.Split(m, ",") {
		p = strings.TrimSpace(p)
		s, c, ok := strings.Cut(p, ":")
		if !ok {
			s, c = p, p
		}
		if s == "" || c == "" {
			continue
		}
		if !seenS[s] {
			seenS[s] = true
			servers = append(servers, s)
		}
		if !seenC[c] {
			seenC[c] = true
			clients = append(clients, c)
		}
	}
	return servers, clients
}

// nicSides are the server and client HCAs the nic-pairs stage pairs: every
// node's HCAs as --nics gives them (c.NICs), else the sides of the test's
// HCA map.
func (c *Config) nicSides(hm HCAMap) (servers, clients []string) {
	if len(c.NICs) > 0 {
		return c.NICs, c.NICs
	}
	return hcaSides(hm.Map)
}

// nicRounds are the HCA pair maps of the nic-pairs stage's rounds for
// servers and clients, one "S:C,S:C" per round, in the order nicPairs
// runs them.
func nicRounds(servers, clients []string) ([]string, error) {
	rounds, err := schedule.HCARounds(len(servers))
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rounds))
	for r, round := range rounds {
		parts := make([]string, len(round))
		for k, pr := range round {
			parts[k] = servers[pr.A] + ":" + clients[pr.B]
		}
		out[r] = strings.Join(parts, ",")
	}
	return out, nil
}

// nicPairs runs every HCA pair between the node pairs worth examining (the
// two nodes of a 2-node set, else each named node with a node that was not
// named) and names the HCAs whose every pair is slow, and the single HCA
// pairs (links) slow on their own. Each round sets the test's declared map
// parameter (hm.Param) to its HCA pairs, and each pair's figure is read
// from the metrics whose declared pair label (hm.Label) is
// SERVER_HCA:CLIENT_HCA.
func (j *job) nicPairs(ctx context.Context, hm HCAMap) {
	const stage = "nic-pairs"
	servers, clients := j.c.nicSides(hm)
	if len(servers) < 2 || len(servers) != len(clients) {
		j.note(fmt.Sprintf("nic-pairs: the HCA map %q names %d server and %d client HCAs; give every node's HCAs (--nics) to compare them pair by pair", hm.Map, len(servers), len(clients)))
		return
	}
	hosts := j.topo.Hosts
	var nodePairs [][2]string
	if len(hosts) == 2 {
		nodePairs = append(nodePairs, [2]string{hosts[0], hosts[1]})
	} else {
		var good []string
		for _, h := range hosts {
			if _, bad := j.named[h]; !bad {
				good = append(good, h)
			}
		}
		for i, h := range j.order {
			if len(good) == 0 || i == maxNICNodePairs {
				break
			}
			nodePairs = append(nodePairs, [2]string{h, good[i%len(good)]})
		}
		if len(nodePairs) == 0 {
			j.note("nic-pairs: no node was named and 3 or more nodes ran, so no node pair was examined HCA by HCA")
			return
		}
	}
	m := len(servers)
	rounds, err := schedule.HCARounds(m)
	if err != nil {
		j.note("nic-pairs: " + err.Error())
		return
	}
	var all []*pending
	for _, np := range nodePairs {
		a, b := np[0], np[1]
		// cells[i][j]: server HCA i of a with client HCA j of b.
		cells := make([][]float64, m)
		failed := make([][]bool, m)
		for i := range cells {
			cells[i] = make([]float64, m)
			failed[i] = make([]bool, m)
		}
		var ps []*pending
		for r, round := range rounds {
			if ctx.Err() != nil {
				break
			}
			parts := make([]string, len(round))
			for k, pr := range round {
				parts[k] = servers[pr.A] + ":" + clients[pr.B]
			}
			nics := strings.Join(parts, ",")
			p := j.request(stage, r+1, j.suite, []string{j.test}, []string{a, b}, fmt.Sprintf("%s-%s-r%d", a, b, r+1), map[string]string{j.test + ":" + hm.Param: nics})
			p.sub.NICs = nics
			j.progress("%s %s+%s round %d of %d: %s", stage, a, b, r+1, len(rounds), nics)
			j.runAll(ctx, []*pending{p}, func(p *pending, run *result.Run, err error) {
				j.fill(p, run, err, j.test)
				j.logRun(p)
			})
			name := strings.TrimPrefix(p.sub.FigureName, "peak ")
			peaks := seriesPeaks(p.test, name, hm.Label)
			for _, pr := range round {
				label := servers[pr.A] + ":" + clients[pr.B]
				v, ok := peaks[label]
				if !ok {
					v = math.NaN()
				} else {
					p.sub.NICFigures = append(p.sub.NICFigures, result.NICFigure{Server: servers[pr.A], Client: clients[pr.B], Figure: v})
				}
				cells[pr.A][pr.B] = v
			}
			for _, mt := range p.test.Metrics {
				if mt.Status == result.Fail && mt.Name == name {
					for _, pr := range round {
						if mt.Labels[hm.Label] == servers[pr.A]+":"+clients[pr.B] {
							failed[pr.A][pr.B] = true
						}
					}
				}
			}
			ps = append(ps, p)
		}
		all = append(all, ps...)
		if ctx.Err() != nil {
			break
		}
		j.judgeMatrix(stage, a, b, servers, clients, cells, failed, ps, rounds)
	}
	j.addStage(stage, len(rounds)*len(nodePairs), all)
}

// judgeMatrix names, from the HCA-pair figures of node a (server side) and
// b (client side), the HCAs whose whole row or column is slow and the links
// slow on their own; ps are the rounds' runs, which it marks.
func (j *job) judgeMatrix(stage, a, b string, servers, clients []string, cells [][]float64, failed [][]bool, ps []*pending, rounds []schedule.Round) {
	m := len(servers)
	var vals []float64
	for i := range cells {
		for _, v := range cells[i] {
			if !math.IsNaN(v) {
				vals = append(vals, v)
			}
		}
	}
	med := upperQuartile(vals)
	tol := j.c.tolerance()
	unit := ""
	if len(ps) > 0 {
		unit = ps[0].sub.Unit
	}
	slow := make([][]bool, m)
	nslow := 0
	for i := range cells {
		slow[i] = make([]bool, m)
		for k, v := range cells[i] {
			slow[i][k] = failed[i][k] || math.IsNaN(v) || v < (1-tol)*med
			if slow[i][k] {
				nslow++
			}
		}
	}
	cell := func(i, k int) string {
		if math.IsNaN(cells[i][k]) {
			return fmt.Sprintf("%s:%s no result", servers[i], clients[k])
		}
		return fmt.Sprintf("%s:%s %s", servers[i], clients[k], fmtFig(cells[i][k], unit))
	}
	// Mark each round's run with its slow cells.
	for r, p := range ps {
		p.sub.Reference = med
		for k, f := range p.sub.NICFigures {
			i, c := indexOf(servers, f.Server), indexOf(clients, f.Client)
			p.sub.NICFigures[k].Slow = slow[i][c]
		}
		var bad []string
		for _, pr := range rounds[r] {
			if slow[pr.A][pr.B] {
				bad = append(bad, cell(pr.A, pr.B))
			}
		}
		if len(bad) > 0 {
			p.sub.Slow = true
			p.sub.Why = fmt.Sprintf("HCA pairs below %.0f%% of the reference %s: %s", 100*(1-tol), fmtFig(med, unit), strings.Join(bad, ", "))
		}
	}
	if nslow == 0 {
		return
	}
	if nslow == m*m {
		j.note(fmt.Sprintf("nic-pairs %s+%s: every HCA pair is slow, so no one HCA explains it", a, b))
		return
	}
	rowSlow := make([]bool, m)
	colSlow := make([]bool, m)
	for i := 0; i < m; i++ {
		rowSlow[i], colSlow[i] = true, true
		for k := 0; k < m; k++ {
			rowSlow[i] = rowSlow[i] && slow[i][k]
			colSlow[i] = colSlow[i] && slow[k][i]
		}
	}
	ev := func(cells []string) []string {
		return []string{fmt.Sprintf("%s %s+%s (reference %s): %s", stage, a, b, fmtFig(med, unit), strings.Join(cells, ", "))}
	}
	// A slow row is a server HCA of a, a slow column a client HCA of b.
	for _, side := range []struct {
		slow        []bool
		host, other string
		hcas        []string
		cell        func(x, y int) string
	}{
		{rowSlow, a, b, servers, func(x, y int) string { return cell(x, y) }},
		{colSlow, b, a, clients, func(x, y int) string { return cell(y, x) }},
	} {
		for x := 0; x < m; x++ {
			if !side.slow[x] {
				continue
			}
			var cs []string
			for y := 0; y < m; y++ {
				cs = append(cs, side.cell(x, y))
			}
			j.loc.Suspects = append(j.loc.Suspects, result.Suspect{Kind: "hca", Host: side.host, HCA: side.hcas[x], Stage: stage,
				Reason: fmt.Sprintf("slow with every one of %s's %d HCAs", side.other, m), Evidence: ev(cs)})
		}
	}
	for i := 0; i < m; i++ {
		for k := 0; k < m; k++ {
			if slow[i][k] && !rowSlow[i] && !colSlow[k] {
				j.loc.Suspects = append(j.loc.Suspects, result.Suspect{Kind: "link", Host: a, HCA: servers[i], Peer: b + ":" + clients[k], Stage: stage,
					Reason: "this HCA pair alone is slow; both HCAs run at speed with other peers", Evidence: ev([]string{cell(i, k)})})
			}
		}
	}
}
