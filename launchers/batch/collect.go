package batch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// collect copies what the job left in the staging folder into the test's
// raw folder through redaction: per step the log, the files it wrote, its
// exit status or what the sequence did to it instead, and the node of
// every rank; and the script and the job's output. A step with neither
// did not finish: its LaunchError says how the job ended.
func collect(req launch.Request, j Job, s Scheduler, o Options, cmds []string, end ending, script string) ([]plan.Output, error) {
	if _, err := launch.MkdirRaw(req, "."); err != nil {
		return nil, err
	}
	if err := writeRedacted(req, o.ScriptFile, strings.NewReader(script)); err != nil {
		return nil, err
	}
	var head strings.Builder
	if end.State.ID != "" {
		fmt.Fprintf(&head, "gpuaccept: %s (from %s)\n", end.State, end.State.Source)
	}
	if end.Stopped != "" {
		fmt.Fprintf(&head, "gpuaccept: %s\n", end.Stopped)
	}
	jobOut, _ := os.Open(filepath.Join(j.Dir, OutputName))
	noOutput := ""
	if jobOut == nil && end.State.ID != "" {
		// The scheduler writes the job's output on its first node:
		// nothing here means that node does not see this folder.
		noOutput = fmt.Sprintf("; the job's output %s never appeared here: is the results folder on a filesystem every node sees?", filepath.Join(j.Dir, OutputName))
		head.WriteString("gpuaccept" + noOutput + "\n")
	}
	var jobReader io.Reader = strings.NewReader(head.String())
	if jobOut != nil {
		defer jobOut.Close()
		jobReader = io.MultiReader(jobReader, jobOut)
	}
	if err := writeRedacted(req, o.OutputFile, jobReader); err != nil {
		return nil, err
	}

	outs := make([]plan.Output, len(j.Plan.Steps))
	for i, st := range j.Plan.Steps {
		outs[i] = collectStep(req, j, s, o, st, cmds[i], end, noOutput)
	}
	return outs, nil
}

// collectStep is collect for one step.
func collectStep(req launch.Request, j Job, s Scheduler, o Options, st plan.Step, cmd string, end ending, noOutput string) plan.Output {
	out := plan.Output{Step: st.Name, Role: st.Role, ExitCode: -1, Command: rankstart.CommandLine(st, cmd)}
	addErr := func(e string) { out.LaunchError = strings.TrimPrefix(out.LaunchError+"; "+e, "; ") }
	w, p, err := launch.CreateLog(req, st.Name)
	if err != nil {
		out.LaunchError = err.Error()
		return out
	}
	out.Log = p
	logPath := stepLog(j.Dir, st.Name)
	if f, err := os.Open(logPath); err == nil {
		_, err = io.Copy(w, f)
		f.Close()
		if err != nil {
			addErr(fmt.Sprintf("copy log of step %s: %v", st.Name, err))
		}
	}
	why := readLine(stepWhy(j.Dir, st.Name))
	code, exited := readExit(stepExit(j.Dir, st.Name))
	var because []string
	switch {
	case why != "":
		// The sequence did not start it, or stopped it: its status is
		// not the step's own.
		because = append(because, why)
	case exited:
		out.ExitCode = code
		if ex, ok := s.(StepExplainer); ok && code != 0 {
			data, _ := os.ReadFile(logPath)
			if e := ex.ExplainStep(code, string(data)); e != "" {
				because = append(because, e)
			}
		}
	case end.Stopped != "":
		because = append(because, end.Stopped)
	case end.State.ID != "":
		because = append(because, fmt.Sprintf("%s before step %s finished (see %s)%s", end.State, st.Name, o.OutputFile, noOutput))
	default:
		because = append(because, fmt.Sprintf("the script ended before step %s finished (see %s)", st.Name, o.OutputFile))
	}
	if len(because) > 0 {
		addErr(strings.Join(because, "; "))
		fmt.Fprintf(w, "\ngpuaccept: step %s: %s\n", st.Name, strings.Join(because, "; "))
	}
	if err := w.Close(); err != nil && out.LaunchError == "" {
		out.LaunchError = err.Error()
	}
	ranks := readRanks(filepath.Join(j.Dir, st.Name+o.RanksExt))
	if len(ranks) > 0 {
		out.Host = hostList(ranks)
		out.RankHosts = rankHosts(ranks)
		var b strings.Builder
		for _, r := range ranks {
			fmt.Fprintf(&b, "%d %s\n", r.rank, r.host)
		}
		if err := writeRedacted(req, st.Name+o.RanksExt, strings.NewReader(b.String())); err != nil {
			addErr(err.Error())
		}
	}
	for _, name := range st.Files {
		// The step's folder is the workload's to fill: a link, FIFO or
		// device there is refused, not collected.
		src, err := safefs.Open(stepWork(j.Dir, st.Name), name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not written: the plugin sees it missing and says so
		}
		if err != nil {
			addErr(fmt.Sprintf("collect file %s of step %s: %v", name, st.Name, err))
			continue
		}
		p, err := launch.CollectFile(req, st.Name, name, src)
		src.Close()
		if err != nil {
			addErr(err.Error())
			continue
		}
		if out.Files == nil {
			out.Files = map[string]string{}
		}
		out.Files[name] = p
	}
	return out
}

// writeRedacted writes src into req.Dir/name with secrets masked.
func writeRedacted(req launch.Request, name string, src io.Reader) error {
	f, _, err := launch.CreateRaw(req, name)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := req.Redactor.Copy(f, src); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// readExit reads the exit status the script wrote for a step.
func readExit(path string) (int, bool) {
	n, err := strconv.Atoi(readLine(path))
	if err != nil {
		return 0, false
	}
	return n, true
}

// maxWhy bounds what is read of a file the script wrote.
const maxWhy = 4096

// readLine is the first line of a file the script wrote, trimmed; "" when
// there is none.
func readLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, maxWhy))
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line)
}

type rankHost struct {
	rank int
	host string
}

// readRanks reads the files the rank wrapper wrote (one per rank, "RANK
// HOST"), in rank order; unreadable files are skipped.
func readRanks(dir string) []rankHost {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []rankHost
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		if sc.Scan() {
			if r, ok := parseRankLine(sc.Text()); ok {
				out = append(out, r)
			}
		}
		f.Close()
	}
	sort.Slice(out, func(a, b int) bool { return out[a].rank < out[b].rank })
	return out
}

// parseRankLine reads the wrapper's "RANK HOST" line.
func parseRankLine(line string) (rankHost, bool) {
	fs := strings.Fields(line)
	if len(fs) != 2 {
		return rankHost{}, false
	}
	n, err := strconv.Atoi(fs[0])
	if err != nil || n < 0 {
		return rankHost{}, false
	}
	return rankHost{n, fs[1]}, true
}

// maxRanks bounds the ranks of one step a rank file may name: a garbled
// rank number must not make a slice of billions.
const maxRanks = 1 << 20

// rankHosts is the host of each rank, index = rank, "" for a rank with no
// file; ranks must be in rank order (readRanks).
func rankHosts(ranks []rankHost) []string {
	var hs []string
	for _, r := range ranks {
		if r.rank >= maxRanks {
			break
		}
		for len(hs) <= r.rank {
			hs = append(hs, "")
		}
		hs[r.rank] = r.host
	}
	return hs
}

// hostList is the nodes the ranks ran on, in rank order, each once:
// "n1,n2".
func hostList(ranks []rankHost) string {
	var hs []string
	seen := map[string]bool{}
	for _, r := range ranks {
		if !seen[r.host] {
			seen[r.host] = true
			hs = append(hs, r.host)
		}
	}
	return strings.Join(hs, ",")
}
