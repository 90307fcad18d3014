package slurm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// RanksFile names the file that lists, one "RANK HOST" line per rank in
// rank order, the node each rank of a step ran on.
func RanksFile(step string) string { return step + layout.SlurmRanksExt }

// collect copies what the job left in the staging folder into the test's
// raw folder through redaction: per step the log, the files it wrote, its
// exit status and the node of every rank; and the script and job output.
// A step without an exit status did not finish: its LaunchError says how
// the job ended.
func collect(req launch.Request, j job, cmds []string, end ending, script string) ([]plan.Output, error) {
	if _, err := launch.MkdirRaw(req, "."); err != nil {
		return nil, err
	}
	if err := writeRedacted(req, layout.SlurmJobScript, strings.NewReader(script)); err != nil {
		return nil, err
	}
	var head strings.Builder
	if end.State.ID != "" {
		fmt.Fprintf(&head, "gpuaccept: %s (from %s)\n", end.State, end.State.Source)
	}
	if end.Stopped != "" {
		fmt.Fprintf(&head, "gpuaccept: %s\n", end.Stopped)
	}
	jobOut, _ := os.Open(filepath.Join(j.Dir, jobOutName))
	noOutput := ""
	if jobOut == nil && end.State.ID != "" {
		// Slurm writes --output on the job's first node: nothing here
		// means that node does not see this folder.
		noOutput = fmt.Sprintf("; the job's output %s never appeared here: is the results folder on a filesystem every node sees?", filepath.Join(j.Dir, jobOutName))
		head.WriteString("gpuaccept" + noOutput + "\n")
	}
	var jobReader io.Reader = strings.NewReader(head.String())
	if jobOut != nil {
		defer jobOut.Close()
		jobReader = io.MultiReader(jobReader, jobOut)
	}
	if err := writeRedacted(req, layout.SlurmJobOutput, jobReader); err != nil {
		return nil, err
	}

	outs := make([]plan.Output, len(j.Plan.Steps))
	for i, s := range j.Plan.Steps {
		o := plan.Output{Step: s.Name, Role: s.Role, ExitCode: -1, Command: rankstart.CommandLine(s, cmds[i])}
		outs[i] = o
		w, p, err := launch.CreateLog(req, s.Name)
		if err != nil {
			outs[i].LaunchError = err.Error()
			continue
		}
		outs[i].Log = p
		if f, err := os.Open(stepLog(j.Dir, s.Name)); err == nil {
			_, err = io.Copy(w, f)
			f.Close()
			if err != nil {
				outs[i].LaunchError = fmt.Sprintf("copy log of step %s: %v", s.Name, err)
			}
		}
		code, exited := readExit(stepExit(j.Dir, s.Name))
		var why []string
		switch {
		case exited:
			outs[i].ExitCode = code
			if code != 0 {
				// srun's own complaints (an MPI plugin that cannot load,
				// a node list it cannot place) say more than the status.
				if errs := srunErrors(stepLog(j.Dir, s.Name)); len(errs) > 0 {
					why = append(why, fmt.Sprintf("srun failed (exit status %d): %s", code, strings.Join(errs, " | ")))
				}
			}
		case end.Stopped != "":
			why = append(why, end.Stopped)
		case end.State.ID != "":
			why = append(why, fmt.Sprintf("%s before step %s finished (see %s)%s", end.State, s.Name, layout.SlurmJobOutput, noOutput))
		default:
			why = append(why, fmt.Sprintf("the script ended before step %s finished (see %s)", s.Name, layout.SlurmJobOutput))
		}
		if len(why) > 0 {
			outs[i].LaunchError = strings.TrimPrefix(outs[i].LaunchError+"; "+strings.Join(why, "; "), "; ")
			fmt.Fprintf(w, "\ngpuaccept: step %s: %s\n", s.Name, strings.Join(why, "; "))
		}
		if err := w.Close(); err != nil && outs[i].LaunchError == "" {
			outs[i].LaunchError = err.Error()
		}
		ranks := readRanks(stepRanks(j.Dir, s.Name))
		if len(ranks) > 0 {
			outs[i].Host = hostList(ranks)
			outs[i].RankHosts = rankHosts(ranks)
			var b strings.Builder
			for _, r := range ranks {
				fmt.Fprintf(&b, "%d %s\n", r.rank, r.host)
			}
			if err := writeRedacted(req, RanksFile(s.Name), strings.NewReader(b.String())); err != nil {
				outs[i].LaunchError = strings.TrimPrefix(outs[i].LaunchError+"; "+err.Error(), "; ")
			}
		}
		for _, name := range s.Files {
			src, err := os.Open(filepath.Join(stepWork(j.Dir, s.Name), name))
			if err != nil {
				continue // not written: the plugin sees it missing and says so
			}
			p, err := launch.CollectFile(req, s.Name, name, src)
			src.Close()
			if err != nil {
				outs[i].LaunchError = strings.TrimPrefix(outs[i].LaunchError+"; "+err.Error(), "; ")
				continue
			}
			if outs[i].Files == nil {
				outs[i].Files = map[string]string{}
			}
			outs[i].Files[name] = p
		}
	}
	return outs, nil
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
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, false
	}
	return n, true
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

// srunErrors returns the first few "srun: error:" lines of a step's log.
func srunErrors(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return srunErrorsIn(string(data))
}

// srunErrorsIn returns the first four "srun: error:" lines of out.
func srunErrorsIn(out string) []string {
	var errs []string
	for _, line := range strings.Split(out, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "srun: error:") && len(errs) < 4 {
			errs = append(errs, line)
		}
	}
	return errs
}
