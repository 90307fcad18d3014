package runner

// This file: check, judging files a run left without running anything.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Check judges existing output files of one test offline, without running
// anything. Files are grouped into runs: a JSON file (nccl-tests -J) joins
// the text log of the same name stem (x.log / x.txt with x.json); the logs
// of a paired test's steps in one folder (ROLE.N.log for the roles the
// test declares, server.N.log and client.N.log for ibperf, as a results
// folder's raw/TEST/ keeps them, or any log its outputs.json gives a role)
// are one run, as the run that made them judged them; every other
// file is a run of its own. Each run is one test result; with several runs
// the test name carries the file name ("nccl.all_reduce[a.log]").
func Check(ctx context.Context, plugins Plugins, s *sku.SKU, name string, topo plan.Topology, files []string, version string) (*result.Run, error) {
	return CheckInto(ctx, plugins, s, name, topo, files, version, "", nil)
}

// CheckInto is Check that, with dir set, also makes dir a results folder
// that gpuaccept verify can check like a run's: each run's files copied
// under raw/TEST/ (raw/TEST.N/ for run N of several) with the outputs.json
// of its steps, baseline (the SKU file content) kept under baseline/, and
// the journal. The files are judged from their copies. Errors name the
// file that could not be read or written.
func CheckInto(ctx context.Context, plugins Plugins, s *sku.SKU, name string, topo plan.Topology, files []string, version, dir string, baseline []byte) (*result.Run, error) {
	pluginName, test, err := SplitName(name)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no log files to check")
	}
	// A .gz or standard input is judged from a plain copy, which lives
	// only while the run is judged (with dir, kept under raw/).
	tmp, err := os.MkdirTemp("", "gpuaccept-check-")
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	defer os.RemoveAll(tmp)
	roles := Roles(ctx, plugins, pluginName, test)
	groups, err := groupFiles(files, tmp, roles)
	if err != nil {
		return nil, err
	}
	groups = pairByMarker(groups, roles, readyMarkers(ctx, plugins, s, pluginName, test, topo))
	// check runs each output once: no retries, recorded so that verify
	// knows the folder is of a gpuaccept that lists its hardware.
	none := 0
	run := &result.Run{SKU: s.Name, SKUSource: s.Source, Suite: "check", Launcher: "check", Scope: topo.Scope, Started: time.Now().UTC(), Version: version, Dir: dir, Tests: []result.Test{}, Retries: &none}
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = name
		if len(groups) > 1 {
			names[i] = fmt.Sprintf("%s[%s]", name, g.label)
		}
	}
	var jw *journal.Writer
	if dir != "" {
		if err := keptSize(groups); err != nil {
			return nil, err
		}
		if err := safefs.MkdirAll(dir, layout.Raw); err != nil {
			return nil, fmt.Errorf("create results folder: %w", err)
		}
		if len(baseline) > 0 {
			if err := journal.SaveBaseline(dir, s.Name, baseline); err != nil {
				return nil, err
			}
		}
		if jw, err = journal.Create(dir, run, names); err != nil {
			return nil, err
		}
		defer jw.Close()
	}
	for i, g := range groups {
		start := time.Now()
		raw := g.files
		if dir != "" {
			if raw, err = keepGroup(dir, resultsdir.CheckDir(name, i+1, len(groups)), &g); err != nil {
				return nil, err
			}
		}
		params := CheckParams(s, name)
		parsed, err := plugins.Parse(ctx, pluginName, pluginapi.ParseRequest{Test: test, Params: params, Topology: topo, Outputs: g.outs})
		if err != nil {
			parsed = result.Parsed{Error: "parse: " + err.Error()}
		}
		t := JudgeWith(s, name, topo, parsed, LabelDefaults(ctx, plugins, pluginName, test), Meanings(ctx, plugins, pluginName, test))
		if IsPreflight(ctx, plugins, pluginName, test) {
			// Judged as a run (and verify) judges it: by its checks.
			t = preflightVerdict(s, name, topo.Scope, t)
			t.Preflight = true
		}
		t.Name = names[i]
		t.Params = params
		t.Raw = raw
		t.Duration = time.Since(start)
		t = redact.Value(redact.Env(), t) // diagnostics quote the logs
		run.Tests = append(run.Tests, t)
		if jw != nil {
			if err := jw.Add(t); err != nil {
				return nil, err
			}
		}
	}
	run.Duration = time.Since(run.Started)
	run.Finish()
	if jw != nil {
		if err := jw.End(run.Duration); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// keptSize refuses logs that would put more than MaxKeptBytes, all
// together and as read (decompressed), into a results folder.
func keptSize(groups []fileGroup) error {
	var n int64
	for _, g := range groups {
		for _, o := range g.outs {
			paths := []string{o.Log}
			for _, f := range o.Files {
				paths = append(paths, f)
			}
			for _, p := range paths {
				if p == "" {
					continue
				}
				fi, err := os.Stat(p)
				if err != nil {
					return fmt.Errorf("keep log file %s: %w", p, err)
				}
				if n += fi.Size(); n > MaxKeptBytes {
					return fmt.Errorf("check --out: the logs given are more than the %s check --out keeps (at %s, decompressed): judge them without --out, or give fewer", byteSize(MaxKeptBytes), p)
				}
			}
		}
	}
	return nil
}

// keepGroup copies the files of g into dir/folder (resultsdir.CheckDir), the layout of a
// results folder (a step's JSON in STEP.files/), points g's outputs at the
// copies, records them in outputs.json and returns the copies' paths
// relative to dir.
func keepGroup(dir, folder string, g *fileGroup) ([]string, error) {
	into := filepath.Join(dir, folder)
	var raw []string
	// The copies are masked, and judged and hashed as masked: verify
	// re-judges the same bytes.
	red := redact.Env()
	cp := func(src, dst string) error {
		rel, _ := filepath.Rel(dir, dst)
		// Streamed (a log of 10^7 rows is over a GB), masked, through
		// safefs: no link below the results folder is written through.
		if err := copyInto(dir, rel, src, red); err != nil {
			return fmt.Errorf("keep log file %s: %w", src, err)
		}
		raw = append(raw, filepath.ToSlash(rel))
		return nil
	}
	used := map[string]bool{}
	for i := range g.outs {
		o := &g.outs[i]
		filesDir := into
		if o.Log != "" {
			base := red.String(filepath.Base(o.Log))
			if used[base] {
				base = fmt.Sprintf("%d.%s", i+1, base)
			}
			used[base] = true
			dst := filepath.Join(into, base)
			if err := cp(o.Log, dst); err != nil {
				return nil, err
			}
			o.Log = dst
			filesDir = filepath.Join(into, layout.StepFiles(strings.TrimSuffix(base, filepath.Ext(base))))
		}
		for k, v := range o.Files {
			dst := filepath.Join(filesDir, red.String(filepath.Base(v)))
			if err := cp(v, dst); err != nil {
				return nil, err
			}
			o.Files[k] = dst
		}
	}
	if err := writeOutputs(dir, into, g.outs, red); err != nil {
		return nil, err
	}
	return raw, nil
}

// fileGroup is one run judged by check: the outputs of its steps and the
// files (as given) they came from.
type fileGroup struct {
	label string
	outs  []plan.Output
	files []string
}

// groupFiles groups the files given to check into runs. A .gz and
// standard input ("-") are read into tmp first (inputs); they group as the
// plain file would (x.log.gz with x.json, server.0.log.gz with
// client.0.log.gz), and the outputs point at the readable copies. roles
// are the test's declared step roles (pluginapi.TestInfo.Roles): a log
// named ROLE.N.log is that step of pair N.
func groupFiles(files []string, tmp string, roles []string) ([]fileGroup, error) {
	var groups []fileGroup
	// where finds a file's output: group index and output index.
	type where struct{ g, o int }
	byStem := map[string]where{}
	pairs := map[string]int{} // folder -> group of its paired steps
	opener := &inputs{tmp: tmp}
	// path is where the plugins read each logical path.
	path := map[string]string{}
	for _, f := range files {
		in, err := opener.open(f)
		if err != nil {
			return nil, err
		}
		abs := in.logical
		if prev, ok := path[abs]; ok && prev != in.path {
			return nil, fmt.Errorf("log file %s: %s is given too, compressed or not: give one", f, abs)
		}
		path[abs] = in.path
		base := filepath.Base(f)
		if f == "-" {
			base = StdinName
		}
		stem := strings.TrimSuffix(abs, filepath.Ext(abs))
		isJSON := strings.EqualFold(filepath.Ext(abs), ".json")
		if d := filepath.Dir(stem); isJSON && filepath.Base(d) == layout.StepFiles(filepath.Base(stem)) {
			// A results folder's STEP.files/STEP.json is STEP.log's.
			stem = filepath.Join(filepath.Dir(d), filepath.Base(stem))
		}
		w, ok := byStem[stem]
		if ok && isJSON && groups[w.g].outs[w.o].Files[filepath.Base(abs)] == abs {
			continue // found beside its log already (STEP.files/)
		}
		if ok && (isJSON && !hasJSON(groups[w.g].outs[w.o]) || !isJSON && groups[w.g].outs[w.o].Log == "") {
			// joins the run of the same stem
		} else if isJSON {
			groups = append(groups, fileGroup{label: base, outs: []plan.Output{{Step: "check"}}})
			w = where{len(groups) - 1, 0}
			byStem[stem] = w
		} else {
			out := plan.Output{Step: "check", Log: abs}
			recorded(&out)
			if role, _, ok := pluginapi.PairedStep(roles, filepath.Base(stem)); out.Role == "" && ok {
				out.Step, out.Role = filepath.Base(stem), role
			}
			gi, paired := pairs[filepath.Dir(abs)]
			if out.Role != "" && paired && !hasStep(groups[gi].outs, out.Step) {
				groups[gi].outs = append(groups[gi].outs, out)
				groups[gi].label += "+" + base
				w = where{gi, len(groups[gi].outs) - 1}
			} else {
				groups = append(groups, fileGroup{label: base, outs: []plan.Output{out}})
				w = where{len(groups) - 1, 0}
				if out.Role != "" {
					pairs[filepath.Dir(abs)] = w.g
				}
			}
			byStem[stem] = w
		}
		g := &groups[w.g]
		o := &g.outs[w.o]
		if isJSON {
			o.Files = map[string]string{filepath.Base(abs): abs}
			g.files = append(g.files, f)
			continue
		}
		if o.Log == "" { // a text log joining its JSON
			o.Log = abs
			g.label = base
			recorded(o)
		}
		g.files = append(g.files, f)
		// A results folder keeps a step's -J file in STEP.files/.
		// Found by check itself, not named: read only as a regular file
		// below the log's folder, through no link (safefs.Check).
		rel := filepath.Join(layout.StepFiles(filepath.Base(stem)), filepath.Base(stem)+".json")
		js := filepath.Join(filepath.Dir(stem), rel)
		found := func(name string) bool { return safefs.Check(filepath.Dir(stem), name) == nil }
		if f != "-" && !hasJSON(*o) && (found(rel) || found(rel+".gz")) {
			given := js
			if !found(rel) {
				given += ".gz"
			}
			in, err := opener.open(given)
			if err != nil {
				return nil, err
			}
			path[in.logical] = in.path
			o.Files = map[string]string{filepath.Base(js): js}
			g.files = append(g.files, given)
		}
	}
	// The plugins read the files where inputs put them.
	for i := range groups {
		for j := range groups[i].outs {
			o := &groups[i].outs[j]
			if o.Log != "" {
				o.Log = path[o.Log]
			}
			for k, v := range o.Files {
				o.Files[k] = path[v]
			}
		}
	}
	// Two logs of the same name from different folders are told apart by
	// the path they were given as.
	count := map[string]int{}
	for _, g := range groups {
		count[g.label]++
	}
	for i := range groups {
		if count[groups[i].label] > 1 {
			groups[i].label = groups[i].files[0]
			if len(groups[i].outs) > 1 {
				groups[i].label = strings.Join(groups[i].files, "+")
			}
		}
	}
	return groups, nil
}

// CheckParams are the parameters check hands a plugin's Parse for test
// (full name), and keeps in the test for verify to parse the same way:
// none, but the metrics the SKU declares for the test
// (sku.DeclaredParam), which say what to read; nil when it declares none.
func CheckParams(s *sku.SKU, test string) map[string]string {
	ds := s.Declared(test)
	if len(ds) == 0 {
		return nil
	}
	return map[string]string{sku.DeclaredParam: sku.EncodeDeclared(ds)}
}

// readyMarkers are the ready lines of a paired test's roles (role ->
// plan.Step.ReadyMarker: ib_write_bw's server prints "Waiting for client
// to connect"), from the plugin's plan of the test at topo: with its
// default parameters, else with those of the first suite of s that runs
// it and plans; only the roles whose every step has the same mark; nil
// when none plans or the plan marks no role so.
func readyMarkers(ctx context.Context, plugins Plugins, s *sku.SKU, plugin, test string, topo plan.Topology) map[string]string {
	tries := []map[string]string{nil}
	for _, sn := range s.SuiteNames() {
		for _, st := range s.Suites[sn].Tests {
			if st.Test == plugin+"."+test {
				tries = append(tries, Params(s.Suites[sn].Params, st.Params))
			}
		}
	}
	var p plan.Plan
	err := fmt.Errorf("not planned")
	for _, params := range tries {
		if p, err = plugins.Plan(ctx, plugin, pluginapi.PlanRequest{Test: test, Params: params, Topology: topo}); err == nil {
			break
		}
	}
	if err != nil {
		return nil
	}
	// A role's ready line is one every step of the role prints: with
	// several pairs ib_write_bw's clients but the last also mark theirs
	// (to start the next pair), and the last does not, so a log without
	// the client's mark is no proof it is a server's.
	marks := map[string]string{}
	unmarked := map[string]bool{}
	for _, st := range p.Steps {
		switch {
		case st.Role == "":
		case st.ReadyMarker == "" || marks[st.Role] != "" && marks[st.Role] != st.ReadyMarker:
			unmarked[st.Role] = true
		default:
			marks[st.Role] = st.ReadyMarker
		}
	}
	var m map[string]string
	for role, mark := range marks {
		if !unmarked[role] {
			if m == nil {
				m = map[string]string{}
			}
			m[role] = mark
		}
	}
	return m
}

// markerScan bounds how far into a log pairByMarker looks for a ready
// line, in bytes: a server prints it before its first result.
const markerScan = 1 << 20

// pairByMarker pairs the logs of a test with two roles that are named as
// people name them (ibwb-server.log, ibwb-client.log) rather than ROLE.N:
// in a folder given exactly two logs without a role, the one that holds
// the ready line of the one role that has one (markers) is that role's
// side and the other the other role's, one run (pair 0) as a results
// folder's server.0.log and client.0.log are. Anything else is left as
// groupFiles made it.
func pairByMarker(groups []fileGroup, roles []string, markers map[string]string) []fileGroup {
	if len(roles) != 2 || len(markers) != 1 {
		return groups
	}
	marked, other := roles[0], roles[1]
	if markers[marked] == "" {
		marked, other = other, marked
	}
	marker := []byte(markers[marked])
	byDir := map[string][]int{}
	var dirs []string
	for i, g := range groups {
		if len(g.outs) != 1 || g.outs[0].Role != "" || g.outs[0].Log == "" || g.files[0] == "-" {
			continue
		}
		d := filepath.Dir(g.files[0])
		if byDir[d] == nil {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], i)
	}
	drop := map[int]bool{}
	for _, d := range dirs {
		ix := byDir[d]
		if len(ix) != 2 {
			continue
		}
		has := [2]bool{logHolds(groups[ix[0]].outs[0].Log, marker), logHolds(groups[ix[1]].outs[0].Log, marker)}
		if has[0] == has[1] {
			continue
		}
		first, second := &groups[ix[0]], groups[ix[1]]
		a, b := &first.outs[0], second.outs[0]
		if has[0] {
			a.Step, a.Role, b.Step, b.Role = marked+".0", marked, other+".0", other
		} else {
			a.Step, a.Role, b.Step, b.Role = other+".0", other, marked+".0", marked
		}
		first.outs = append(first.outs, b)
		first.files = append(first.files, second.files...)
		first.label += "+" + second.label
		drop[ix[1]] = true
	}
	out := groups[:0]
	for i, g := range groups {
		if !drop[i] {
			out = append(out, g)
		}
	}
	return out
}

// logHolds says whether the first markerScan bytes of the log at path hold
// marker; a log that cannot be read holds nothing (its parse says why).
func logHolds(path string, marker []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, markerScan)
	n, _ := io.ReadFull(f, buf)
	return bytes.Contains(buf[:n], marker)
}

func hasStep(outs []plan.Output, step string) bool {
	for _, o := range outs {
		if o.Step == step {
			return true
		}
	}
	return false
}

// recorded fills how the step of a log from a results folder ended (exit
// code, launch error, host, command) from the outputs.json beside it, so
// checking a crashed run's log does not pass it. A step with a role (one
// side of a paired test) also keeps its step name and role, which the
// plugin pairs the sides by.
func recorded(o *plan.Output) {
	outs, ok := resultsdir.ReadOutputsBeside(o.Log)
	if !ok {
		return
	}
	for _, r := range outs {
		if r.Log == filepath.Base(o.Log) {
			o.ExitCode, o.LaunchError, o.Host, o.Command = r.ExitCode, r.LaunchError, r.Host, r.Command
			if r.Role != "" {
				o.Step, o.Role = r.Step, r.Role
			}
			return
		}
	}
}

func hasJSON(o plan.Output) bool { return len(o.Files) > 0 }
