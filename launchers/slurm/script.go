package slurm

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// job is everything a script is rendered from.
type job struct {
	// Test is the full test name.
	Test string
	// Dir is the absolute staging folder the script writes into; every node
	// must see it at the same path.
	Dir      string
	Plan     plan.Plan
	Topology plan.Topology
	// MPI is the resolved start: MPIMpirun, MPIPMIx or MPIPMI2.
	MPI string
	// Batch renders #SBATCH directives (submit mode); false renders a script
	// that runs inside an existing allocation.
	Batch bool
	// Time is the #SBATCH --time value; empty: none.
	Time string
	// AllowRoot adds mpirun's --allow-run-as-root (the job runs as the user
	// who submits it).
	AllowRoot bool
	// Environ is the environment mpirun forwards variables from by name.
	Environ []string
	// AllocHosts are the allocation's nodes, when known at render time
	// (allocation mode); mpirun is pinned to the first Topology.Nodes of them
	// when the allocation is larger.
	AllocHosts []string
	// Pinned says the test runs on the hosts given (Config.Hosts), a part
	// of the allocation (a localisation's runs): every step names its
	// nodes, as the allocation's other nodes may be busy with another run.
	Pinned bool
	Config Config
}

// File names inside the staging folder, per step.
func stepLog(dir, step string) string   { return filepath.Join(dir, layout.StepLog(step)) }
func stepExit(dir, step string) string  { return filepath.Join(dir, step+".exit") }
func stepWork(dir, step string) string  { return filepath.Join(dir, step+".work") }
func stepRanks(dir, step string) string { return filepath.Join(dir, step+layout.SlurmRanksExt) }

// Names of the staging folder's job-level files.
const (
	scriptName = "job.sh"
	jobOutName = "job.out"
	hostsName  = "hosts"
)

// rankWrapper runs in front of every rank: it records which node the rank
// ran on (one file per rank, named after its rank, in the folder given as
// $0) and then becomes the workload. The rank comes from the variable the
// starter sets: Open MPI's, PMIx's, PMI-2's, or srun's task id.
const rankWrapper = `r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}; echo "$r ${SLURMD_NODENAME:-$(hostname)}" >"$0/$r"; exec "$@"`

// render writes the script that runs the job's steps: a batch script with
// #SBATCH directives, or (Batch false) a script run inside an allocation.
// Every value that reaches the shell is quoted with rankstart.ShellQuote;
// directive values were validated by Config.Validate. The second result is
// each step's command line as it appears in the script.
func render(j job) (string, []string, error) {
	if err := j.Plan.Validate(); err != nil {
		return "", nil, fmt.Errorf("render script for %s: %w", j.Test, err)
	}
	if strings.ContainsAny(j.Dir, "\r\n\x00") || !filepath.IsAbs(j.Dir) {
		return "", nil, fmt.Errorf("render script for %s: staging folder %q must be an absolute path without line breaks", j.Test, j.Dir)
	}
	// Every step sees the job's nodes (plan.HostsEnv), read from the hosts
	// file when it starts (shellWord).
	j.Plan = j.Plan.WithHostsEnv(j.Topology.Nodes)
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	t := j.Topology
	perNode := 1
	for _, s := range j.Plan.Steps {
		if s.ProcsPerNode > perNode {
			perNode = s.ProcsPerNode
		}
	}
	if j.Batch {
		if strings.ContainsAny(j.Dir, " \t\"'\\") {
			return "", nil, fmt.Errorf("render script for %s: results folder %q holds blanks, quotes or backslashes, which #SBATCH --output cannot take: choose an --out without them", j.Test, j.Dir)
		}
		c := j.Config
		d := func(format string, a ...any) { fmt.Fprintf(&b, "#SBATCH "+format+"\n", a...) }
		d("--job-name=%s", jobName(j.Test))
		d("--nodes=%d", t.Nodes)
		d("--ntasks-per-node=%d", perNode)
		switch c.GPUs {
		case GPUsPerNode:
			d("--gpus-per-node=%d", t.GPUsPerNode)
		case GPUsGres:
			d("--gres=gpu:%d", t.GPUsPerNode)
		}
		if c.Exclusive {
			d("--exclusive")
		}
		if j.Time != "" {
			d("--time=%s", j.Time)
		}
		// sbatch expands %j and friends in --output; a literal % is %%.
		d("--output=%s", strings.ReplaceAll(filepath.Join(j.Dir, jobOutName), "%", "%%"))
		for _, f := range []struct{ name, v string }{{"partition", c.Partition}, {"account", c.Account}, {"qos", c.QOS}, {"reservation", c.Reservation}} {
			if f.v != "" {
				d("--%s=%s", f.name, f.v)
			}
		}
		if len(c.Hosts) > 0 {
			d("--nodelist=%s", strings.Join(c.Hosts, ","))
		}
		for _, a := range c.SbatchArgs {
			d("%s", a)
		}
	}
	fmt.Fprintf(&b, "# gpuaccept: test %s on %d node(s) x %d GPU(s), MPI start: %s.\n", j.Test, t.Nodes, t.GPUsPerNode, j.MPI)
	if j.Batch {
		b.WriteString("# Outputs go to the folder below, which every node must see at the same path.\n")
	} else {
		b.WriteString("# Runs inside the allocation $SLURM_JOB_ID; outputs go to the folder below,\n# which every node must see at the same path.\n")
	}
	b.WriteString("set -u\n")
	fmt.Fprintf(&b, "job=%s\n", rankstart.ShellQuote(j.Dir))
	b.WriteString("[ -d \"$job\" ] || { echo \"gpuaccept: $job is not visible on $(hostname): the results folder must be on a filesystem every node sees\" >&2; exit 3; }\n")
	if hs := j.Config.Hosts; len(hs) > 0 {
		// A step's Host indexes the hosts as given; Slurm lists the
		// allocation's nodes in its own order.
		fmt.Fprintf(&b, "printf '%%s\\n' %s >\"$job/%s\"\n", rankstart.ShellJoin(hs), hostsName)
	} else {
		fmt.Fprintf(&b, "scontrol show hostnames \"$SLURM_JOB_NODELIST\" >\"$job/%s\"\n", hostsName)
	}

	var background []string
	var cmds []string
	for _, s := range j.Plan.Steps {
		line, err := stepLine(j, s)
		if err != nil {
			return "", nil, err
		}
		cmds = append(cmds, line)
		name := s.Name
		fmt.Fprintf(&b, "\n# step %s: %d process(es), %d per node\n", name, s.Procs, s.ProcsPerNode)
		fmt.Fprintf(&b, "mkdir -p \"$job/%s.work\" \"$job/%s%s\"\n", name, name, layout.SlurmRanksExt)
		fmt.Fprintf(&b, "cd \"$job/%s.work\" || exit 1\n", name)
		b.WriteString("(\n")
		if err := rankstart.CheckEnvNames(s); err != nil {
			return "", nil, fmt.Errorf("render script for %s: %w", j.Test, err)
		}
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, kv := range srunEnv(j, s) {
			k, v, _ := strings.Cut(kv, "=")
			if _, own := s.Env[k]; !own {
				fmt.Fprintf(&b, "\texport %s=%s\n", k, shellWord(v))
			}
		}
		for _, k := range keys {
			fmt.Fprintf(&b, "\texport %s=%s\n", k, shellWord(s.Env[k]))
		}
		fmt.Fprintf(&b, "\texec %s\n", line)
		if s.ReadyMarker != "" {
			fmt.Fprintf(&b, ") >\"$job/%s.log\" 2>&1 &\n", name)
			v := "pid_" + strings.NewReplacer(".", "_", "-", "_").Replace(name)
			fmt.Fprintf(&b, "%s=$!\n", v)
			fmt.Fprintf(&b, "until grep -qF -e %s \"$job/%s.log\" 2>/dev/null || ! kill -0 \"$%s\" 2>/dev/null; do sleep 1; done\n",
				rankstart.ShellQuote(s.ReadyMarker), name, v)
			background = append(background, fmt.Sprintf("wait \"$%s\"; echo $? >\"$job/%s.exit\"\n", v, name))
			continue
		}
		fmt.Fprintf(&b, ") >\"$job/%s.log\" 2>&1\n", name)
		fmt.Fprintf(&b, "echo $? >\"$job/%s.exit\"\n", name)
	}
	if len(background) > 0 {
		b.WriteString("\n# steps started in the background\n")
		for _, w := range background {
			b.WriteString(w)
		}
	}
	return b.String(), cmds, nil
}

// start is the run's starter options (Config.Start); without them HCOLL
// is off for Open MPI, as under every launcher.
func (j job) start() rankstart.Options {
	if j.Config.Start == nil {
		return rankstart.Options{DisableHCOLL: rankstart.Or(j.Config.Starter).Family() == rankstart.FamilyOpenMPI}
	}
	return *j.Config.Start
}

// srunEnv is what srun's ranks of an MPI step need in their environment
// from the run's starter options (rankstart's srun Env: OMPI_MCA_...), as
// NAME=value.
func srunEnv(j job, s plan.Step) []string {
	if !(rankstart.NeedsStarter(s) && s.MPI) || j.MPI == MPIMpirun {
		return nil
	}
	st, err := rankstart.Lookup(rankstart.FlavorSrun)
	if err != nil {
		return nil
	}
	return st.Env(j.start())
}

// jobName is the job's (and its steps') name: gpuaccept-TEST.
func jobName(test string) string { return "gpuaccept-" + test }

// stepLine is the rank starter's command line for one step.
func stepLine(j job, s plan.Step) (string, error) {
	wrapped := append([]string{"/bin/sh", "-c", rankWrapper, "$job/" + s.Name + layout.SlurmRanksExt}, s.Argv...)
	mpi := rankstart.NeedsStarter(s) && s.MPI
	if mpi && j.MPI == MPIMpirun {
		var hs []string
		if len(j.AllocHosts) > j.Topology.Nodes || j.Pinned {
			hs = j.AllocHosts[:j.Topology.Nodes]
		}
		argv, err := rankstart.Or(j.Config.Starter).Argv(plan.Step{Name: s.Name, Argv: wrapped, Env: s.Env, Procs: s.Procs, ProcsPerNode: s.ProcsPerNode, MPI: true},
			rankstart.Merge(j.start(), rankstart.Options{Hosts: hs, AllowRoot: j.AllowRoot, ExtraArgs: j.Config.MPIArgs, Environ: j.Environ}))
		if err != nil {
			return "", fmt.Errorf("render script for %s: %w", j.Test, err)
		}
		return joinWithJob(argv), nil
	}
	o := rankstart.Options{JobName: jobName(j.Test) + "." + s.Name}
	if mpi {
		// The run's binding, and its MCA settings and HCOLL's switch as
		// the environment (srun has no --mca; srunEnv exports them).
		o = rankstart.Merge(j.start(), o)
		o.ExtraArgs = nil
		o.PMI = j.MPI
	}
	single := !rankstart.NeedsStarter(s)
	if c := j.Config; c.ContainerImage != "" {
		// The ranks write into the staging folder and run in the step's
		// working folder, so the container sees both at the host's path.
		if strings.ContainsAny(j.Dir, ",: \t\"'\\") {
			return "", fmt.Errorf("render script for %s: results folder %q holds a comma, colon, blank or quote, which pyxis' --container-mounts cannot take: choose an --out without them", j.Test, j.Dir)
		}
		mounts := j.Dir + ":" + j.Dir
		if c.ContainerMounts != "" {
			mounts = c.ContainerMounts + "," + mounts
		}
		o.ExtraArgs = append(o.ExtraArgs, "--container-image="+c.ContainerImage, "--container-mounts="+mounts,
			"--container-workdir="+stepWork(j.Dir, s.Name))
	}
	if j.Pinned && !single {
		o.Hosts = j.AllocHosts[:(s.Procs+s.ProcsPerNode-1)/s.ProcsPerNode]
	}
	srun, err := rankstart.Lookup(rankstart.FlavorSrun)
	if err != nil {
		return "", err
	}
	argv, err := srun.Argv(plan.Step{Name: s.Name, Argv: wrapped, Procs: s.Procs, ProcsPerNode: s.ProcsPerNode, MPI: s.MPI}, o)
	if err != nil {
		return "", fmt.Errorf("render script for %s: %w", j.Test, err)
	}
	// The starter's words end with the program: the node of a single
	// step goes between them, as shell text.
	argv = argv[:len(argv)-len(wrapped)]
	line := joinWithJob(argv)
	if single && (s.Role != "" || s.Host > 0 || j.Pinned) {
		// A server or client runs on its own node of the allocation, and
		// the servers and clients of several pairs (ib_write_bw, one per
		// HCA pair) at once: --overlap, or the second step on a node waits
		// for the first to end ("Requested nodes are busy", a step taking
		// every CPU of its nodes since Slurm 20.11) while the first waits
		// for its client. A pinned step (a localisation's run on some
		// nodes of the allocation) names its node too.
		overlap := ""
		if s.Role != "" || s.Host > 0 {
			overlap = " --overlap"
		}
		line += fmt.Sprintf("%s --nodelist=\"$(sed -n %dp \"$job/%s\")\"", overlap, s.Host+1, hostsName)
	}
	return line + " " + joinWithJob(wrapped), nil
}

// joinWithJob shell-joins argv, leaving a leading "$job/" of a word for
// the shell to expand (inside double quotes); every other character is
// quoted.
func joinWithJob(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if rest, ok := strings.CutPrefix(a, "$job/"); ok && validStep(rest) {
			q[i] = `"$job/` + rest + `"`
			continue
		}
		q[i] = shellWord(a)
	}
	return strings.Join(q, " ")
}

// shellWord quotes v for the script; a plan.HostRef becomes the node's name
// read from the job's hosts file when the step starts, since the nodes are
// known only once Slurm has allocated them, and a plan.HostListRef the
// file's first N names joined by commas.
func shellWord(v string) string {
	if i, ok := plan.HostRefIndex(v); ok {
		return fmt.Sprintf(`"$(sed -n %dp "$job/%s")"`, i+1, hostsName)
	}
	if n, ok := plan.HostListRefCount(v); ok {
		return fmt.Sprintf(`"$(sed -n 1,%dp "$job/%s" | paste -sd, -)"`, n, hostsName)
	}
	return rankstart.ShellQuote(v)
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
