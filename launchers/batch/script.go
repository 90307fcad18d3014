package batch

import (
	_ "embed"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// runtime is the sequencer's rules in bash, emitted into every script
// before its steps; TestScriptSequence runs it.
//
//go:embed runtime.sh
var runtime string

// File names inside the staging folder, per step and per job.
func stepLog(dir, step string) string  { return filepath.Join(dir, layout.StepLog(step)) }
func stepExit(dir, step string) string { return filepath.Join(dir, step+".exit") }
func stepWhy(dir, step string) string  { return filepath.Join(dir, step+".why") }
func stepWork(dir, step string) string { return filepath.Join(dir, step+".work") }

// StepWork is the working folder of step in the staging folder dir: the
// files it writes (plan.Step.Files) are collected from there; a container
// runtime mounts it (pyxis' --container-workdir).
func StepWork(dir, step string) string { return stepWork(dir, step) }

// Names of the staging folder's job-level files.
const (
	// ScriptName is the script in the staging folder.
	ScriptName = "job.sh"
	// OutputName is where the job's own output goes (#SBATCH --output).
	OutputName = "job.out"
	hostsName  = "hosts"
)

// rankWrapper is what runs in front of every rank: it records which node
// the rank ran on (one file per rank, named after its rank, in the folder
// given as $0) and then becomes the workload. The rank comes from the
// variable the starter sets: Open MPI's, PMIx's, PMI-2's, then the
// scheduler's own (o.RankVars).
func rankWrapper(o Options) string {
	vars := append([]string{"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}, o.RankVars...)
	r := "0"
	for i := len(vars) - 1; i >= 0; i-- {
		r = "${" + vars[i] + ":-" + r + "}"
	}
	node := "$(hostname)"
	if o.NodeVar != "" {
		node = "${" + o.NodeVar + ":-$(hostname)}"
	}
	return `r=` + r + `; echo "$r ` + node + `" >"$0/$r"; exec "$@"`
}

// Wrap is argv behind the rank wrapper: the words a scheduler's StepStart
// gets as wrapped.
func Wrap(o Options, s plan.Step) []string {
	return append([]string{"/bin/sh", "-c", rankWrapper(o), "$job/" + s.Name + o.RanksExt}, s.Argv...)
}

// seconds is d rounded up to whole seconds, def when d is zero.
func seconds(d, def time.Duration) int {
	return int(math.Ceil(or(d, def).Seconds()))
}

// Render writes the script that runs j's steps: the scheduler's header,
// the job's nodes file, one function per step and the sequencer's rules
// (runtime.sh) calling them. Every value that reaches the shell is quoted
// (Word); the header is the scheduler's. The second result is each step's
// start line as it appears in the script.
func Render(j Job, s Scheduler, o Options) (string, []string, error) {
	if err := j.Plan.Validate(); err != nil {
		return "", nil, fmt.Errorf("render script for %s: %w", j.Test, err)
	}
	if strings.ContainsAny(j.Dir, "\r\n\x00") || !filepath.IsAbs(j.Dir) {
		return "", nil, fmt.Errorf("render script for %s: staging folder %q must be an absolute path without line breaks", j.Test, j.Dir)
	}
	// Every step sees the job's nodes (plan.HostsEnv), read from the
	// nodes file when it starts (Word).
	j.Plan = j.Plan.WithHostsEnv(j.Topology.Nodes)
	header, err := s.Header(j)
	if err != nil {
		return "", nil, fmt.Errorf("render script for %s: %w", j.Test, err)
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	for _, h := range header {
		b.WriteString(h + "\n")
	}
	b.WriteString("set -u\n")
	fmt.Fprintf(&b, "job=%s\n", rankstart.ShellQuote(j.Dir))
	b.WriteString("[ -d \"$job\" ] || { echo \"gpuaccept: $job is not visible on $(hostname): the results folder must be on a filesystem every node sees\" >&2; exit 3; }\n")
	if len(j.Hosts) > 0 {
		// A step's Host indexes the hosts as given; the scheduler lists
		// the job's nodes in its own order.
		fmt.Fprintf(&b, "printf '%%s\\n' %s >\"$job/%s\"\n", rankstart.ShellJoin(j.Hosts), hostsName)
	} else {
		fmt.Fprintf(&b, "%s >\"$job/%s\"\n", s.NodesCommand(), hostsName)
	}
	fmt.Fprintf(&b, "linger=%d grace=%d ranks=%s\n\n", seconds(o.Linger, launch.DefaultLinger), seconds(o.StopGrace, DefaultKillGrace), rankstart.ShellQuote(o.RanksExt))
	b.WriteString(runtime)

	var cmds []string
	for i, st := range j.Plan.Steps {
		if err := rankstart.CheckEnvNames(st); err != nil {
			return "", nil, fmt.Errorf("render script for %s: %w", j.Test, err)
		}
		line, env, err := s.StepStart(j, st, Wrap(o, st))
		if err != nil {
			return "", nil, fmt.Errorf("render script for %s: %w", j.Test, err)
		}
		cmds = append(cmds, line)
		fmt.Fprintf(&b, "\n# step %s: %d process(es), %d per node\n", st.Name, st.Procs, st.ProcsPerNode)
		timeout := seconds(st.Timeout, 0)
		if st.Role == plan.Evidence {
			timeout = seconds(st.Timeout, launch.DefaultEvidenceTimeout)
		}
		fmt.Fprintf(&b, "step_name[%d]=%s step_timeout[%d]=%d step_marker[%d]=%s\n", i, st.Name, i, timeout, i, rankstart.ShellQuote(st.ReadyMarker))
		if st.ReadyMarker != "" {
			// launch.Sequence's words for a server that ended too soon.
			fmt.Fprintf(&b, "step_unready[%d]=%s\n", i, rankstart.ShellQuote(fmt.Sprintf("step %s ended before its readiness line %q showed", st.Name, st.ReadyMarker)))
		}
		fmt.Fprintf(&b, "step_%d() {\n", i)
		keys := make([]string, 0, len(st.Env))
		for k := range st.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			if _, own := st.Env[k]; !own {
				fmt.Fprintf(&b, "\texport %s=%s\n", k, Word(v))
			}
		}
		for _, k := range keys {
			fmt.Fprintf(&b, "\texport %s=%s\n", k, Word(st.Env[k]))
		}
		fmt.Fprintf(&b, "\texec %s\n}\n", line)
	}
	b.WriteString("\n# the steps, in the sequencer's order\n")
	for _, g := range groups(j.Plan.Steps) {
		fmt.Fprintf(&b, "%s\n", g)
	}
	b.WriteString("gpuaccept_finish\n")
	return b.String(), cmds, nil
}

// groups is the sequence's calls, in launch.Sequence's order: an evidence
// step noted (run only when the script is told the test's time ran out:
// runtime.sh's gpuaccept_timed_out), a monitor
// beside the rest, a step with a ReadyMarker in the background, consecutive clients without one
// together, any other step alone.
func groups(steps []plan.Step) []string {
	var out []string
	// Noted before anything starts: the test may time out in its first
	// group.
	for i, s := range steps {
		if s.Role == plan.Evidence {
			out = append(out, fmt.Sprintf("gpuaccept_evidence %d", i))
		}
	}
	for i := 0; i < len(steps); {
		if steps[i].Role == plan.Evidence {
			i++
			continue
		}
		if steps[i].Role == plan.Monitor {
			out = append(out, fmt.Sprintf("gpuaccept_monitor %d", i))
			i++
			continue
		}
		if steps[i].ReadyMarker != "" {
			out = append(out, fmt.Sprintf("gpuaccept_background %d", i))
			i++
			continue
		}
		j := i + 1
		if steps[i].Role == "client" {
			for j < len(steps) && steps[j].Role == "client" && steps[j].ReadyMarker == "" {
				j++
			}
		}
		g := "gpuaccept_group"
		for k := i; k < j; k++ {
			g += fmt.Sprintf(" %d", k)
		}
		out = append(out, g)
		i = j
	}
	return out
}

// JoinWithJob shell-joins argv, leaving a leading "$job/" of a word (the
// staging folder) for the shell to expand inside double quotes; every
// other word is a Word.
func JoinWithJob(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if rest, ok := strings.CutPrefix(a, "$job/"); ok && validStep(rest) {
			q[i] = `"$job/` + rest + `"`
			continue
		}
		q[i] = Word(a)
	}
	return strings.Join(q, " ")
}

// Word quotes v for the script; a plan.HostRef becomes the node's name
// read from the job's nodes file when the step starts (HostWord), since
// the nodes are known only once the scheduler has allocated them, and a
// plan.HostListRef the file's first N names joined by commas.
func Word(v string) string {
	if i, ok := plan.HostRefIndex(v); ok {
		return HostWord(i)
	}
	if n, ok := plan.HostListRefCount(v); ok {
		return fmt.Sprintf(`"$(sed -n 1,%dp "$job/%s" | paste -sd, -)"`, n, hostsName)
	}
	return rankstart.ShellQuote(v)
}

// HostWord is the shell word of the job's node i (from 0), read from its
// nodes file when the step starts.
func HostWord(i int) string {
	return fmt.Sprintf(`"$(sed -n %dp "$job/%s")"`, i+1, hostsName)
}

// validStep reports whether s is a step folder name as plan.Validate allows
// step names ([a-z0-9_.-]) with its suffix: nothing a double-quoted shell
// word would expand.
func validStep(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return s != ""
}
