package report

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// maxHTMLRuns bounds the rows of a stage's run table in report.html: every
// slow run is shown, good ones up to this many rows in all (a pairs stage
// over 1024 nodes holds half a million runs); results.json keeps them all.
const maxHTMLRuns = 2000

// maxMatrixHosts is the most hosts a pairs stage's host x host matrix is
// drawn for; beyond, the matrix is wider than any page.
const maxMatrixHosts = 32

type htmlLoc struct {
	result.Localisation
	ID        string
	Status    result.Status
	Heading   string
	NoSuspect string
	Stages    []htmlStage
}

type htmlStage struct {
	Name     string
	Summary  string
	NICs     bool
	Runs     []htmlRun
	LeftOut  int
	Matrices []htmlMatrix
}

type htmlRun struct {
	result.SubRun
	HostList string
	// NICList is NICs with room to wrap.
	NICList   string
	Measured  string
	Reference string
	// Report is the sub-run's own report.html, relative to the main
	// results folder; "" when the run has no folder.
	Report string
}

// htmlMatrix is a host x host (pairs) or server-HCA x client-HCA
// (nic-pairs) table of figures.
type htmlMatrix struct {
	Kind    string // "hosts" or "nics"
	Title   string
	Corner  string
	Columns []string
	Rows    []matrixRow
}

type matrixRow struct {
	Name  string
	Cells []matrixCell
}

type matrixCell struct {
	Text  string
	Class string // pass, fail, warn (a slow run of several HCA pairs), "" none
	Title string
}

func htmlLocalisations(run *result.Run) []htmlLoc {
	var out []htmlLoc
	for i, l := range run.Localisations {
		hl := htmlLoc{Localisation: l, ID: fmt.Sprintf("l%d", i), Status: l.Verdict(), Heading: locHeading(l)}
		if len(l.Suspects) == 0 {
			hl.NoSuspect = noSuspect(l)
		}
		for _, st := range l.Stages {
			hs := htmlStage{Name: st.Name, Summary: stageSummary(st), NICs: stageHasNICs(st)}
			budget := maxHTMLRuns - slowRuns(st)
			for _, r := range st.Runs {
				if !r.Slow {
					if budget <= 0 {
						hs.LeftOut++
						continue
					}
					budget--
				}
				hr := htmlRun{SubRun: r, HostList: strings.Join(r.Hosts, ", "), NICList: strings.ReplaceAll(r.NICs, ",", ", "), Measured: figureText(r), Reference: referenceText(r)}
				if r.Dir != "" {
					hr.Report = path.Join(filepath.ToSlash(r.Dir), layout.HTML)
				}
				hs.Runs = append(hs.Runs, hr)
			}
			if hs.NICs {
				hs.Matrices = nicMatrices(st)
			} else if m, ok := hostMatrix(l, st); ok {
				hs.Matrices = []htmlMatrix{m}
			}
			hl.Stages = append(hl.Stages, hs)
		}
		out = append(out, hl)
	}
	return out
}

// cellOf keeps, for a matrix cell seen in several runs, the worst: a slow
// one over a good one, then the lowest figure.
type cellOf struct {
	figure float64
	slow   bool
	shared int // HCA pairs that share the figure (a run not split per pair)
	unit   string
	runs   []string
}

func (c *cellOf) add(figure float64, slow bool, shared int, unit, run string) {
	worse := len(c.runs) == 0 || slow && !c.slow || slow == c.slow && figure < c.figure
	if worse {
		c.figure, c.slow, c.shared, c.unit = figure, slow, shared, unit
	}
	c.runs = append(c.runs, run)
}

func (c *cellOf) cell() matrixCell {
	if c == nil {
		return matrixCell{}
	}
	m := matrixCell{Text: fmt.Sprintf("%.1f", c.figure), Class: "pass", Title: fmt.Sprintf("%.1f %s", c.figure, c.unit)}
	if c.shared > 1 {
		// The run measured several HCA pairs at once and reports its
		// lowest: each of its pairs did at least that, and a slow run
		// does not say which of its pairs was slow.
		m.Text = "≥ " + m.Text
		m.Title = fmt.Sprintf("at least %.1f %s: the lowest of a run of %d HCA pairs", c.figure, c.unit, c.shared)
		if c.slow {
			m.Class, m.Title = "warn", m.Title+"; that run was slow, maybe not through this pair"
		}
	} else if c.slow {
		m.Class, m.Title = "fail", m.Title+", slow"
	}
	if c.figure == 0 {
		m.Text, m.Title = "none", "measured nothing"
		if c.slow {
			m.Class = "fail"
		}
	}
	m.Title += " (" + strings.Join(c.runs, "; ") + ")"
	return m
}

// hostMatrix draws the host x host matrix of a stage of node pairs (every
// run on two hosts, no HCA map) over at most maxMatrixHosts hosts, in the
// localisation's host order.
func hostMatrix(l result.Localisation, st result.Stage) (htmlMatrix, bool) {
	cells := map[[2]string]*cellOf{}
	seen := map[string]bool{}
	for _, r := range st.Runs {
		if len(r.Hosts) != 2 {
			return htmlMatrix{}, false
		}
		for _, k := range [][2]string{{r.Hosts[0], r.Hosts[1]}, {r.Hosts[1], r.Hosts[0]}} {
			if cells[k] == nil {
				cells[k] = &cellOf{}
			}
			cells[k].add(r.Figure, r.Slow, 1, r.Unit, fmt.Sprintf("round %d", r.Round))
		}
		seen[r.Hosts[0]], seen[r.Hosts[1]] = true, true
	}
	if len(seen) == 0 || len(seen) > maxMatrixHosts {
		return htmlMatrix{}, false
	}
	var hosts []string
	for _, h := range l.Hosts {
		if seen[h] {
			hosts = append(hosts, h)
			delete(seen, h)
		}
	}
	var rest []string
	for h := range seen {
		rest = append(rest, h)
	}
	sort.Slice(rest, func(i, j int) bool { return naturalLess(rest[i], rest[j]) })
	hosts = append(hosts, rest...)
	m := htmlMatrix{Kind: "hosts", Title: st.Name + ": " + figureName(st) + " per node pair", Corner: "host", Columns: hosts}
	for _, a := range hosts {
		row := matrixRow{Name: a}
		for _, b := range hosts {
			if a == b {
				row.Cells = append(row.Cells, matrixCell{Text: "-"})
				continue
			}
			row.Cells = append(row.Cells, cells[[2]string{a, b}].cell())
		}
		m.Rows = append(m.Rows, row)
	}
	return m, true
}

// nicMatrices draws, per server/client host pair of a nic-pairs stage, the
// server-HCA x client-HCA matrix. A run's NICs is "S:C,S:C" (ibperf's
// pairs parameter); its NICFigures, when the localiser split them, give
// each pair's figure, else a run of one pair gives its Figure and a run
// of several shows its Figure as a lower bound in each of its cells.
func nicMatrices(st result.Stage) []htmlMatrix {
	type group struct {
		servers, clients map[string]bool
		cells            map[[2]string]*cellOf
	}
	groups := map[string]*group{}
	var order []string
	for _, r := range st.Runs {
		if r.NICs == "" || len(r.Hosts) == 0 {
			continue
		}
		key := strings.Join(r.Hosts, " -> ")
		g := groups[key]
		if g == nil {
			g = &group{servers: map[string]bool{}, clients: map[string]bool{}, cells: map[[2]string]*cellOf{}}
			groups[key] = g
			order = append(order, key)
		}
		add := func(s, c string, figure float64, slow bool, shared int) {
			g.servers[s], g.clients[c] = true, true
			k := [2]string{s, c}
			if g.cells[k] == nil {
				g.cells[k] = &cellOf{}
			}
			g.cells[k].add(figure, slow, shared, r.Unit, fmt.Sprintf("round %d", r.Round))
		}
		if len(r.NICFigures) > 0 {
			for _, nf := range r.NICFigures {
				add(nf.Server, nf.Client, nf.Figure, nf.Slow, 1)
			}
			continue
		}
		pairs := strings.Split(r.NICs, ",")
		for _, p := range pairs {
			s, c, ok := strings.Cut(strings.TrimSpace(p), ":")
			if !ok {
				// Not an HCA map this report can draw; the run table shows it.
				continue
			}
			add(s, c, r.Figure, r.Slow, len(pairs))
		}
	}
	var out []htmlMatrix
	for _, key := range order {
		g := groups[key]
		servers, clients := sortedSet(g.servers), sortedSet(g.clients)
		m := htmlMatrix{Kind: "nics", Title: fmt.Sprintf("%s: %s per HCA pair, %s", st.Name, figureName(st), key),
			Corner: "server \\ client", Columns: clients}
		for _, s := range servers {
			row := matrixRow{Name: s}
			for _, c := range clients {
				row.Cells = append(row.Cells, g.cells[[2]string{s, c}].cell())
			}
			m.Rows = append(m.Rows, row)
		}
		out = append(out, m)
	}
	return out
}

// figureName names what a stage's figures are: "busbw (GB/s)".
func figureName(st result.Stage) string {
	for _, r := range st.Runs {
		if r.Unit != "" {
			n := r.FigureName
			if n == "" {
				n = "figure"
			}
			return n + " (" + r.Unit + ")"
		}
	}
	return "figure"
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i], out[j]) })
	return out
}

// naturalLess orders names by their text, then by the number they end
// with: mlx5_2 before mlx5_10, node9 before node10.
func naturalLess(a, b string) bool {
	split := func(s string) (string, int, bool) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		n, err := strconv.Atoi(s[i:])
		return s[:i], n, err == nil
	}
	pa, na, oka := split(a)
	pb, nb, okb := split(b)
	if pa == pb && oka && okb && na != nb {
		return na < nb
	}
	return a < b
}
