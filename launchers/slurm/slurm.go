// Package slurm is the launcher for Slurm clusters, in both ways sites use
// them: from a login node it submits one batch job per test with sbatch,
// follows it to its end and collects the outputs; called inside an
// allocation (SLURM_JOB_ID set, as from an sbatch script) it runs the steps
// with srun or mpirun in that allocation. Both run the same script, which
// --dry-run prints. On timeout, Ctrl-C or any error the launcher cancels
// what it started (scancel), so nothing stays queued or running.
//
// The staging folder (RESULTS/raw/TEST/.slurm) must be on a filesystem every
// node sees at the same path: ranks write their outputs there.
//
// This package is Slurm's half of the launcher: its flags, the #SBATCH
// directives, how a step starts (mpirun, or srun with its PMI, pyxis'
// container), and sbatch, squeue/sacct/scontrol and scancel behind
// batch.Scheduler. The script's order and failure rules, the staging
// folder, following the job and collecting its outputs are
// launchers/batch's, shared with any other batch scheduler.
package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/launchers/batch"
)

// Name is the --launcher value.
const Name = "slurm"

func init() {
	launch.Register(Name, func() launch.Config { c := defaults(); return &c })
}

// Launcher runs plans on a Slurm cluster.
type Launcher struct {
	Config Config
	// Environ is the environment gpuaccept runs in (SLURM_JOB_ID, the
	// variables mpirun forwards, SLURM_CONF); nil means os.Environ().
	Environ []string
	// KillGrace is how long the steps of allocation mode have between
	// SIGTERM and SIGKILL; zero means 10 s.
	KillGrace time.Duration
	// CancelWait bounds the wait for a cancelled job to end; zero: 2 min.
	CancelWait time.Duration

	// exec runs Slurm's commands; nil runs them for real (tests replay
	// captured answers through it).
	exec batch.ExecFunc
}

// Name implements launch.Launcher.
func (l *Launcher) Name() string { return Name }

func (l *Launcher) environ() []string {
	if l.Environ != nil {
		return l.Environ
	}
	return os.Environ()
}

func (l *Launcher) getenv(name string) string {
	for _, kv := range l.environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// allocation returns the job id of the allocation gpuaccept runs in, or ""
// when it submits jobs of its own.
func (l *Launcher) allocation() (string, error) {
	id := l.getenv("SLURM_JOB_ID")
	switch l.Config.Mode {
	case ModeSubmit:
		return "", nil
	case ModeAllocation:
		if id == "" {
			return "", errors.New("--slurm-mode allocation: SLURM_JOB_ID is not set (run gpuaccept inside sbatch or salloc, or use --slurm-mode submit)")
		}
	}
	return id, nil
}

// run runs a Slurm command (batch.Command) and returns its standard
// output; the error is a *batch.CommandError.
func (l *Launcher) run(ctx context.Context, name string, args ...string) (string, error) {
	return batch.Command(ctx, l.exec, l.environ(), name, args...)
}

// resolveMPI turns MPIAuto into the cluster's choice: slurm.conf's
// MpiDefault when it is pmix or pmi2, else mpirun. An srun start the
// cluster's srun does not offer (srun --mpi=list) is an error before
// anything is submitted.
func (l *Launcher) resolveMPI(ctx context.Context) (string, error) {
	m := l.Config.MPI
	if m == MPIAuto {
		out, err := l.run(ctx, "scontrol", "show", "config")
		if err != nil {
			return "", autoMPIError{fmt.Errorf("--slurm-mpi auto: read the cluster's MpiDefault: %w (choose --slurm-mpi mpirun, pmix or pmi2)", err)}
		}
		m = MPIMpirun
		for _, line := range strings.Split(out, "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && strings.TrimSpace(k) == "MpiDefault" {
				v = strings.TrimSpace(v)
				if strings.HasPrefix(v, "pmix") {
					m = MPIPMIx
				} else if v == "pmi2" {
					m = MPIPMI2
				}
			}
		}
	}
	switch m {
	case MPIMpirun:
		if l.Config.ContainerImage != "" {
			return "", fmt.Errorf("--container-image needs an srun start, but MPI steps would start with mpirun: use --slurm-mpi pmix or pmi2")
		}
	case MPIPMIx, MPIPMI2:
		out, err := l.run(ctx, "srun", "--mpi=list")
		if err != nil {
			return "", fmt.Errorf("--slurm-mpi %s: ask srun which MPI plugins it has: %w", m, err)
		}
		if !offers(out, m) {
			return "", fmt.Errorf("--slurm-mpi %s cannot work: this cluster's srun offers %s (srun --mpi=list); choose one of them or mpirun",
				m, strings.Join(mpiTypes(out), ", "))
		}
		if m == MPIPMI2 {
			if err := l.checkOpenMPIPMI2(ctx); err != nil {
				return "", err
			}
		}
	}
	return m, nil
}

// mpiTypes reads srun --mpi=list: "MPI plugin types are...", then one
// indented name per line, then "specific pmix plugin versions
// available: ...".
func mpiTypes(out string) []string {
	var ts []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ") {
			if t := strings.TrimSpace(line); t != "" {
				ts = append(ts, t)
			}
		}
	}
	return ts
}

func offers(out, m string) bool {
	for _, t := range mpiTypes(out) {
		if t == m || strings.HasPrefix(t, m+"_") {
			return true
		}
	}
	return false
}

// checkOpenMPIPMI2 rejects pmi2 when the Open MPI here was built without
// Slurm's PMI-1/PMI-2 support (no s1/s2 pmix component), as Debian's is:
// its ranks would each start as a singleton. Without ompi_info there is
// nothing to check.
func (l *Launcher) checkOpenMPIPMI2(ctx context.Context) error {
	if _, err := exec.LookPath("ompi_info"); err != nil && l.exec == nil {
		return nil
	}
	out, err := l.run(ctx, "ompi_info", "--parsable")
	if err != nil {
		return nil
	}
	if strings.Contains(out, "mca:pmix:s2:") || strings.Contains(out, "mca:pmix:s1:") {
		return nil
	}
	return errors.New("--slurm-mpi pmi2 cannot work with this Open MPI: ompi_info lists no s1/s2 pmix component (built without Slurm PMI-2, as Debian's is); use --slurm-mpi pmix or mpirun")
}

// newJob builds what render needs for req.
func (l *Launcher) newJob(ctx context.Context, req launch.Request) (job, error) {
	alloc, err := l.allocation()
	if err != nil {
		return job{}, err
	}
	mpi, err := l.resolveMPI(ctx)
	if err != nil {
		return job{}, err
	}
	dir, err := batch.StagingDir(req.Dir, stagingName)
	if err != nil {
		return job{}, err
	}
	j := job{Job: batch.Job{Test: req.Test, Dir: dir, Plan: req.Plan, Topology: req.Topology, Batch: alloc == "", Hosts: l.Config.Hosts},
		MPI: mpi, AllowRoot: os.Geteuid() == 0, Environ: l.environ(), Config: l.Config, l: l}
	if j.Batch {
		switch {
		case l.Config.Time != "":
			j.Time, _ = jobMinutes(l.Config.Time)
		case req.Timeout > 0:
			j.Time, _ = jobMinutes((req.Timeout + TimeSlack).String())
		}
		return j, nil
	}
	hs, err := l.allocHosts(ctx)
	if err != nil {
		return job{}, err
	}
	if len(l.Config.Hosts) > 0 {
		// Hosts given inside an allocation pick some of its nodes: the
		// runs of a localisation, side by side in one allocation.
		in := map[string]bool{}
		for _, h := range hs {
			in[h] = true
		}
		for _, h := range l.Config.Hosts {
			if !in[h] {
				return job{}, fmt.Errorf("host %s is not a node of allocation %s (%s): inside an allocation --hosts/--hostfile can only pick some of its nodes", h, alloc, strings.Join(hs, ","))
			}
		}
		hs, j.Pinned = l.Config.Hosts, true
	}
	if len(hs) < req.Topology.Nodes {
		return job{}, fmt.Errorf("allocation %s has %d node(s) (%s), the test needs %d", alloc, len(hs), strings.Join(hs, ","), req.Topology.Nodes)
	}
	j.AllocHosts = hs
	return j, nil
}

// allocHosts expands the allocation's node list with scontrol show
// hostnames.
func (l *Launcher) allocHosts(ctx context.Context) ([]string, error) {
	list := l.getenv("SLURM_JOB_NODELIST")
	if list == "" {
		list = l.getenv("SLURM_NODELIST")
	}
	if list == "" {
		return nil, errors.New("inside an allocation, but SLURM_JOB_NODELIST is not set")
	}
	return l.hostnames(ctx, list)
}

// hostnames expands a compressed node list ("n[1-2]") with scontrol.
func (l *Launcher) hostnames(ctx context.Context, list string) ([]string, error) {
	out, err := l.run(ctx, "scontrol", "show", "hostnames", list)
	if err != nil {
		return nil, fmt.Errorf("expand node list %q: %w", list, err)
	}
	return strings.Fields(out), nil
}

// Commands implements launch.Launcher: the whole script, exactly as it
// would be submitted (or run inside the allocation).
// A dry run off the cluster (a laptop: no scontrol answers) of --slurm-mpi
// auto assumes mpirun, auto's choice when MpiDefault is neither pmix nor
// pmi2, and says so in the script.
func (l *Launcher) Commands(req launch.Request) ([]string, error) {
	j, err := l.newJob(context.Background(), req)
	var auto autoMPIError
	note := ""
	if errors.As(err, &auto) {
		assumed := *l
		assumed.Config.MPI = MPIMpirun
		j, err = assumed.newJob(context.Background(), req)
		note = "# gpuaccept: dry run: " + AutoAssumed + "\n"
	}
	if err != nil {
		return nil, err
	}
	script, _, err := render(j)
	if err != nil {
		return nil, err
	}
	if note != "" {
		// Under the #! line, so the script stays one to run.
		first, rest, _ := strings.Cut(script, "\n")
		if strings.HasPrefix(first, "#!") {
			script = first + "\n" + note + rest
		} else {
			script = note + script
		}
	}
	return []string{strings.TrimRight(script, "\n")}, nil
}

// AutoAssumed is what a dry run of --slurm-mpi auto says when no cluster
// answered which MPI start it would choose.
const AutoAssumed = "--slurm-mpi auto: no cluster answered scontrol show config, so MPI steps are shown started with mpirun; on the cluster auto starts them with srun --mpi=pmix or pmi2 when its MpiDefault is one of those (give --slurm-mpi to choose)"

// autoMPIError is the error of --slurm-mpi auto when the cluster's
// MpiDefault cannot be read (no cluster answered).
type autoMPIError struct{ error }

func (e autoMPIError) Unwrap() error { return e.error }

// Launch implements launch.Launcher: batch.Launch with this test's job.
func (l *Launcher) Launch(ctx context.Context, req launch.Request) ([]plan.Output, error) {
	j, err := l.newJob(ctx, req)
	if err != nil {
		return nil, err
	}
	return batch.Launch(ctx, req, j.Job, j, j.options())
}

// stagingName is the staging folder's name in the test's raw folder.
const stagingName = ".slurm"

// options are Slurm's names and this launcher's timings for batch.
func (j job) options() batch.Options {
	o := batch.Options{ScriptFile: layout.SlurmJobScript, OutputFile: layout.SlurmJobOutput, RanksExt: layout.SlurmRanksExt,
		RankVars: []string{"SLURM_PROCID"}, NodeVar: "SLURMD_NODENAME", CancelCommand: "scancel",
		Poll: j.Config.Poll, PendingTimeout: j.Config.PendingTimeout}
	if j.l != nil {
		o.CancelWait, o.KillGrace, o.Environ = j.l.CancelWait, j.l.KillGrace, j.l.environ()
	}
	return o
}

// Submit implements batch.Scheduler: sbatch --parsable.
func (j job) Submit(ctx context.Context, b batch.Job, path string) (string, error) {
	out, err := j.l.run(ctx, "sbatch", "--parsable", "--chdir="+b.Dir, path)
	if err != nil {
		return "", err
	}
	return parseJobID(out)
}

// Query implements batch.Scheduler (query).
func (j job) Query(ctx context.Context, id string) (batch.State, error) {
	st, err := j.l.query(ctx, id)
	return st.batch(), err
}

// Cancel implements batch.Scheduler: scancel.
func (j job) Cancel(ctx context.Context, id string) error {
	_, err := j.l.run(ctx, "scancel", id)
	return err
}

// SignalEvidence implements batch.Signaller: SIGUSR1 to the job's batch
// script alone (scancel --signal=USR1 --batch), which then runs the
// test's evidence steps before it stops the others.
func (j job) SignalEvidence(ctx context.Context, id string) error {
	_, err := j.l.run(ctx, "scancel", "--signal=USR1", "--batch", id)
	return err
}

// CancelSteps implements batch.StepCanceller: scancel of the steps of the
// allocation gpuaccept runs in whose name starts with prefix, those srun
// started for this test that outlived their srun.
func (j job) CancelSteps(ctx context.Context, prefix string) {
	jobID := j.l.getenv("SLURM_JOB_ID")
	if jobID == "" {
		return
	}
	out, err := j.l.run(ctx, "squeue", "-h", "-s", "-j", jobID, "-o", "%i|%j")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		step, name, ok := strings.Cut(strings.TrimSpace(line), "|")
		if ok && strings.HasPrefix(name, prefix) {
			_, _ = j.l.run(ctx, "scancel", step)
		}
	}
}

// ExplainStep implements batch.StepExplainer: srun's own complaints (an
// MPI plugin that cannot load, a node list it cannot place) say more than
// the status.
func (j job) ExplainStep(code int, log string) string {
	if errs := srunErrorsIn(log); len(errs) > 0 {
		return fmt.Sprintf("srun failed (exit status %d): %s", code, strings.Join(errs, " | "))
	}
	return ""
}

// RanksFile names the file that lists, one "RANK HOST" line per rank in
// rank order, the node each rank of a step ran on.
func RanksFile(step string) string { return step + layout.SlurmRanksExt }

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

// query asks squeue for the job's state. A job squeue no longer lists
// (it forgets ended jobs after MinJobAge) is looked up in sacct, where the
// cluster keeps accounting, then with scontrol. A job squeue shows as ended
// is described by scontrol, which holds its exit code as the controller
// knows it; sacct, fed asynchronously, may not have it yet.
func (l *Launcher) query(ctx context.Context, id string) (JobState, error) {
	var errs []string
	out, err := l.run(ctx, "squeue", "-h", "-t", "all", "-j", id, "-o", squeueFormat)
	sq, sqOK, perr := parseSqueue(out, id)
	switch {
	case err != nil:
		errs = append(errs, err.Error())
		sqOK = false
	case perr != nil:
		errs = append(errs, perr.Error())
		sqOK = false
	case sqOK && !sq.Terminal():
		return sq, nil
	}
	order := []func(context.Context, string) (JobState, bool, error){l.sacct, l.scontrol}
	if sqOK {
		order = []func(context.Context, string) (JobState, bool, error){l.scontrol, l.sacct}
	}
	for _, f := range order {
		st, ok, err := f(ctx, id)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if ok {
			return st, nil
		}
	}
	if sqOK {
		return sq, nil
	}
	return JobState{}, fmt.Errorf("job %s: %s", id, strings.Join(errs, "; "))
}

func (l *Launcher) sacct(ctx context.Context, id string) (JobState, bool, error) {
	out, err := l.run(ctx, "sacct", "-n", "-P", "-X", "-j", id, "-o", sacctFields)
	if err != nil {
		var ce *batch.CommandError
		if errors.As(err, &ce) && strings.Contains(ce.Msg, accountingDisabled) {
			// A cluster without accounting: scontrol is next.
			return JobState{}, false, nil
		}
		return JobState{}, false, err
	}
	return parseSacct(out, id)
}

func (l *Launcher) scontrol(ctx context.Context, id string) (JobState, bool, error) {
	out, err := l.run(ctx, "scontrol", "show", "job", "-o", id)
	if err != nil {
		return JobState{}, false, err
	}
	return parseScontrol(out, id)
}
