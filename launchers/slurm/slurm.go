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
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
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
	exec func(ctx context.Context, env []string, name string, args ...string) (stdout, stderr string, err error)
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

// run runs a Slurm command with a bound on its run time and returns its
// standard output; the error carries its standard error.
func (l *Launcher) run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	exe := l.exec
	if exe == nil {
		exe = execCommand
	}
	out, errOut, err := exe(ctx, l.environ(), name, args...)
	if err != nil {
		msg := strings.TrimSpace(errOut)
		if msg == "" {
			msg = strings.TrimSpace(out)
		}
		return out, &cmdError{cmd: name + " " + strings.Join(args, " "), msg: msg, err: err}
	}
	return out, nil
}

// execCommand runs a command and returns its standard output and error.
func execCommand(ctx context.Context, env []string, name string, args ...string) (string, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

// cmdError is a Slurm command that failed, with what it printed.
type cmdError struct {
	cmd, msg string
	err      error
}

// Error leads with what the command said ("sbatch: error: Invalid partition
// name specified"): tables cut long messages, and the command line, with
// its paths, is the least telling part.
func (e *cmdError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("%s: %v", e.cmd, e.err)
	}
	return fmt.Sprintf("%s (%s: %v)", e.msg, e.cmd, e.err)
}

func (e *cmdError) Unwrap() error { return e.err }

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

// stagingDir is where the job writes: RESULTS/raw/TEST/.slurm.
func stagingDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("staging folder for %s: %w", dir, err)
	}
	return filepath.Join(abs, ".slurm"), nil
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
	dir, err := stagingDir(req.Dir)
	if err != nil {
		return job{}, err
	}
	j := job{Test: req.Test, Dir: dir, Plan: req.Plan, Topology: req.Topology, MPI: mpi, Batch: alloc == "",
		AllowRoot: os.Geteuid() == 0, Environ: l.environ(), Config: l.Config}
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

// Launch implements launch.Launcher.
func (l *Launcher) Launch(ctx context.Context, req launch.Request) ([]plan.Output, error) {
	j, err := l.newJob(ctx, req)
	if err != nil {
		return nil, err
	}
	script, cmds, err := render(j)
	if err != nil {
		return nil, err
	}
	// A staging folder from an earlier attempt would mix outputs.
	if err := os.RemoveAll(j.Dir); err != nil {
		return nil, fmt.Errorf("clear staging folder %s: %w", j.Dir, err)
	}
	if _, err := launch.MkdirRaw(req, "."); err != nil {
		return nil, err
	}
	if err := os.Mkdir(j.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create staging folder: %w", err)
	}
	// The script holds the steps' environment, secrets included: only the
	// redacted copy outlives the run.
	defer os.RemoveAll(j.Dir)
	path := filepath.Join(j.Dir, scriptName)
	if err := os.WriteFile(path, []byte(script), 0o700); err != nil {
		return nil, fmt.Errorf("write batch script: %w", err)
	}
	var end ending
	if j.Batch {
		end, err = l.submit(ctx, req, j, path)
	} else {
		end, err = l.runInAllocation(ctx, req, j, path)
	}
	if err != nil {
		// The script that could not be submitted is kept for the user.
		if werr := writeRedacted(req, layout.SlurmJobScript, strings.NewReader(script)); werr != nil {
			err = fmt.Errorf("%w (and: %v)", err, werr)
		}
		return nil, err
	}
	return collect(req, j, cmds, end, script)
}

// ending is how a job (or the script inside an allocation) ended.
type ending struct {
	// State is the job's final state (submit mode); zero in allocation mode.
	State JobState
	// Stopped says why gpuaccept stopped it (timeout, Ctrl-C, a failed
	// query); empty when it ended by itself.
	Stopped string
}

// submit submits the script, follows the job to its end, and cancels it
// when the test times out, ctx is cancelled or following fails.
func (l *Launcher) submit(ctx context.Context, req launch.Request, j job, path string) (ending, error) {
	// Ctrl-C while sbatch runs must not leave a job submitted whose id
	// gpuaccept never learnt: sbatch finishes (bounded), then ctx counts.
	out, err := l.run(context.WithoutCancel(ctx), "sbatch", "--parsable", "--chdir="+j.Dir, path)
	if err != nil {
		return ending{}, fmt.Errorf("submit batch job for %s: %w", req.Test, err)
	}
	id, err := parseJobID(out)
	if err != nil {
		return ending{}, fmt.Errorf("submit batch job for %s: %w", req.Test, err)
	}
	st, why := l.follow(ctx, id, req.Timeout)
	if why != "" {
		st = l.cancel(id, st)
	}
	return ending{State: st, Stopped: why}, nil
}

// follow polls the job until it ends, the test's timeout (counted from
// the job's start) expires, the pending bound expires, ctx is cancelled, or
// Slurm stops knowing the job. It returns the last state seen and, when it
// gave up on the job, why.
func (l *Launcher) follow(ctx context.Context, id string, timeout time.Duration) (JobState, string) {
	poll := l.Config.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	submitted := time.Now()
	var started time.Time
	var last JobState
	unknown := 0
	for {
		st, err := l.query(ctx, id)
		switch {
		case err == nil:
			unknown = 0
			last = st
			if st.Terminal() {
				return st, ""
			}
			if started.IsZero() && st.State != "PENDING" && st.State != "CONFIGURING" {
				started = time.Now()
			}
		case ctx.Err() == nil:
			// Slurm may be briefly unreachable (controller restart); a
			// job unknown for several polls in a row is lost.
			unknown++
			if unknown >= 5 {
				return last, fmt.Sprintf("lost track of job %s: %v", id, err)
			}
		}
		if ctx.Err() != nil {
			return last, fmt.Sprintf("cancelled; job %s cancelled with scancel", id)
		}
		if !started.IsZero() && timeout > 0 && time.Since(started) > timeout {
			return last, fmt.Sprintf("timed out after %s of running; job %s cancelled with scancel", time.Since(started).Round(time.Second), id)
		}
		if started.IsZero() && l.Config.PendingTimeout > 0 && time.Since(submitted) > l.Config.PendingTimeout {
			return last, fmt.Sprintf("job %s still pending after %s (reason %s); cancelled with scancel", id, time.Since(submitted).Round(time.Second), last.Reason)
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
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
		var ce *cmdError
		if errors.As(err, &ce) && strings.Contains(ce.msg, accountingDisabled) {
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

// cancel scancels the job and waits (bounded) until Slurm says it ended,
// so the outputs are complete and nothing runs on; it returns the last
// state seen.
func (l *Launcher) cancel(id string, last JobState) JobState {
	wait := l.CancelWait
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	ctx, stop := context.WithTimeout(context.Background(), wait)
	defer stop()
	_, _ = l.run(ctx, "scancel", id)
	for ctx.Err() == nil {
		st, err := l.query(ctx, id)
		if err == nil {
			last = st
			if st.Terminal() {
				return st
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
		// scancel again: a job submitted a moment ago may have been
		// pending in a state the first one raced.
		_, _ = l.run(ctx, "scancel", id)
	}
	return last
}

// runInAllocation runs the script with bash inside the current allocation,
// as its own process group, and stops it on timeout or ctx cancellation:
// SIGTERM (srun passes it to the tasks), SIGKILL after the grace period,
// then scancel of any step of this test still alive.
func (l *Launcher) runInAllocation(ctx context.Context, req launch.Request, j job, path string) (ending, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	out, err := os.Create(filepath.Join(j.Dir, jobOutName))
	if err != nil {
		return ending{}, fmt.Errorf("create job output: %w", err)
	}
	defer out.Close()
	cmd := exec.Command("bash", path)
	cmd.Dir = j.Dir
	cmd.Env = l.environ()
	cmd.Stdout, cmd.Stderr = out, out
	grace := l.KillGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	// What the script left on this node ends with it, whichever way.
	end, err := launch.RunGroup(ctx, cmd, launch.GroupStop{Name: jobName(req.Test), Grace: grace})
	if err != nil {
		return ending{}, fmt.Errorf("start the script inside allocation: %w", err)
	}
	if end.Stopped == "" {
		return ending{}, nil
	}
	why := end.Stopped + "; steps stopped"
	l.cancelSteps(l.getenv("SLURM_JOB_ID"), jobName(req.Test)+".")
	return ending{Stopped: why}, nil
}

// cancelSteps scancels the steps of job whose name starts with prefix:
// those srun started for this test and that outlived their srun.
func (l *Launcher) cancelSteps(jobID, prefix string) {
	if jobID == "" {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	out, err := l.run(ctx, "squeue", "-h", "-s", "-j", jobID, "-o", "%i|%j")
	if err != nil {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		step, name, ok := strings.Cut(strings.TrimSpace(line), "|")
		if ok && strings.HasPrefix(name, prefix) {
			_, _ = l.run(ctx, "scancel", step)
		}
	}
}
