// Package batch is the scheduler-neutral half of a launcher for a batch
// scheduler (Slurm today; PBS, LSF or another one next): one batch job per
// test, whose script runs the plan's steps on the job's nodes by the rules
// of the shared step sequencer (framework/launch.Sequence), and everything
// around that script that does not depend on the scheduler.
//
// What it owns:
//
//   - The script (Render): the staging folder check, the job's nodes file,
//     one shell function per step (its environment, the rank wrapper that
//     records each rank's node, the scheduler's start line), and the
//     sequencer's rules in bash (runtime.sh, emitted verbatim):
//     plan order, a server (a step with a ReadyMarker) released by its
//     marker, consecutive clients started together, a group waited for
//     with every background step started before it, the failure rule (a
//     non-zero exit, or a server that ends before its marker, starts no
//     later step: "not started: step X failed (exit status 1)"), the
//     linger stop (background steps given launch.DefaultLinger after a
//     failure, then stopped: "stopped after step X failed (...)") and a
//     step's own Timeout.
//   - The staging folder (RESULTS/raw/TEST/.NAME, on a filesystem every
//     node sees): created per attempt, removed after, as the script in it
//     holds the steps' environment unmasked.
//   - Evidence steps (plan.Evidence): noted as not run, and run by the
//     script only when it gets SIGUSR1 (runtime.sh's gpuaccept_timed_out),
//     which a submitted job whose test timed out gets first from a
//     Signaller (Slurm: scancel --signal=USR1 --batch), before the steps
//     are stopped and the job cancelled. Inside an allocation the script
//     is stopped at once: no evidence there yet.
//   - Submitting, following the job to its end (Follow: the test's timeout
//     counted from the job's start, a pending bound, a job the scheduler
//     lost), cancelling it and waiting for its end (Cancel); or, inside an
//     allocation, running the script here as a process group (launch.RunGroup).
//   - Collection: each step's log, files, exit status, the sequencer's
//     verdict on it and the node of every rank into raw/TEST, through
//     redaction, with the script and the job's output; a scheduler's
//     commands run with a bound (Command).
//
// # A new scheduler
//
// PBS, LSF or another batch scheduler is a launcher package on this one,
// launchers/slurm its model (its script.go and the scheduler half of
// slurm.go). It writes:
//
//   - launchers/NAME/NAME.go: the Config (its flags, Bind, Build,
//     Validate naming the flag; registered with launch.Register) and a
//     Launcher whose Launch is batch.Launch and whose Commands is Render
//     (the dry run); a job type implementing Scheduler: Header (#PBS -l
//     select=N:ngpus=G, walltime, -q, -o into the staging folder),
//     NodesCommand (sort -u "$PBS_NODEFILE"), StepStart (mpirun of
//     rankstart for MPI steps, the scheduler's own task starter, pbsdsh or
//     blaunch, for the others, a single step on HostWord(s.Host)), Submit
//     (qsub, bsub), Query (qstat -f, bjobs: Ended, Queued and Meaning
//     filled), Cancel (qdel, bkill); and its Options (file names, RankVars:
//     the variable its task starter numbers tasks by, NodeVar,
//     CancelCommand); its commands run through Command.
//   - launchers/NAME/state.go: the parsers of its query commands, tested
//     on answers captured from a real scheduler, with a fuzz test.
//   - framework/resultsdir/layout: the names of the script and job output
//     it keeps in raw/TEST (as SlurmJobScript), and resultsdir.Strays'
//     case for its launcher name, so verify knows them.
//   - cmd/gpuaccept/main.go's blank import, launcherFlags in
//     cmd/gpuaccept/launcherflags_test.go, README.md's launcher flags, and
//     a scripts/testenv.d service its integration tests run against.
//
// The script, its order and failure rules, staging, following, cancelling
// and collection need nothing of it.
package batch

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Scheduler is what one batch scheduler adds to this package, for one
// test's job. Every method's error says what was being done; Render and
// Launch wrap them with the test's name.
type Scheduler interface {
	// Header returns the script's lines between "#!/bin/bash" and its
	// body: the directives that ask for the job's nodes, time and queue
	// when j.Batch (#SBATCH, #PBS, #BSUB), and any comment. Values it
	// writes must have been validated: the header is not quoted.
	Header(j Job) ([]string, error)
	// NodesCommand is the shell command that prints the job's nodes, one
	// a line, in the scheduler's order (Slurm's `scontrol show hostnames
	// "$SLURM_JOB_NODELIST"`, PBS's `sort -u "$PBS_NODEFILE"`); used when
	// j.Hosts is empty.
	NodesCommand() string
	// StepStart returns the shell text that starts step s's ranks on the
	// job's nodes running wrapped (the rank wrapper, then s.Argv: join it
	// with JoinWithJob, which leaves "$job/" to the shell), and the
	// NAME=value pairs the step's processes need beyond s.Env (exported
	// before it; s.Env wins). A single step (not rankstart.NeedsStarter)
	// runs on node s.Host: HostWord(s.Host) is that node's name.
	StepStart(j Job, s plan.Step, wrapped []string) (line string, env []string, err error)
	// Submit submits the script at path (in j.Dir) and returns the job's
	// id; it is called with a context that Ctrl-C does not cancel, so a
	// submitted job's id is never lost.
	Submit(ctx context.Context, j Job, path string) (id string, err error)
	// Query returns the job's state; an error means no command answered.
	Query(ctx context.Context, id string) (State, error)
	// Cancel asks the scheduler to end the job (queued or running).
	Cancel(ctx context.Context, id string) error
}

// Signaller is a Scheduler that can signal a running job's batch script
// (Slurm: scancel --signal=USR1 --batch). A submitted test with evidence
// steps (plan.Evidence) that runs out of time is signalled first: the
// script runs its evidence steps while the test's steps still run, then
// stops them and ends; the job is cancelled after it, as always.
type Signaller interface {
	SignalEvidence(ctx context.Context, id string) error
}

// DefaultEvidenceWait bounds how long a signalled job has to collect its
// evidence and end before it is cancelled: the evidence steps' own bound
// and the stop's grace, with room for the scheduler's polling.
const DefaultEvidenceWait = launch.DefaultEvidenceTimeout + 45*time.Second

// StepExplainer is a Scheduler that reads a failed step's log for the
// starter's own complaint ("srun failed (exit status 1): srun: error:
// ..."), which says more than the exit status; "" when it finds none.
type StepExplainer interface {
	ExplainStep(code int, log string) string
}

// StepCanceller is a Scheduler that can end what the script's steps left
// running inside an allocation after the script was stopped (Slurm's steps
// named prefix*, scancel'd); it is called with a bounded context.
type StepCanceller interface {
	CancelSteps(ctx context.Context, prefix string)
}

// Job is one test's job, as the script is rendered from it.
type Job struct {
	// Test is the full test name.
	Test string
	// Dir is the absolute staging folder the script writes into; every
	// node must see it at the same path.
	Dir      string
	Plan     plan.Plan
	Topology plan.Topology
	// Batch says the script is a batch job of its own, with directives;
	// false: it runs inside an allocation gpuaccept runs in.
	Batch bool
	// Hosts are the hosts given (--hosts): a step's Host indexes them,
	// written into the nodes file as given rather than in the scheduler's
	// order.
	Hosts []string
}

// JobName is the name of the job of test: gpuaccept-TEST.
func JobName(test string) string { return "gpuaccept-" + test }

// State is what a scheduler says about a job.
type State struct {
	// ID is the job's id.
	ID string
	// State is the scheduler's own word for it (RUNNING, TIMEOUT; PBS's R,
	// F).
	State string
	// Ended says the job will never run again; Queued that it has not
	// started yet (the test's timeout does not count while it is).
	Ended, Queued bool
	// Meaning explains State to a user ("the job reached its time limit
	// (--time)"); empty when the word says it.
	Meaning string
	// Reason is the scheduler's reason (Resources, TimeLimit); "None" or
	// empty for none.
	Reason string
	// ExitCode is the batch script's exit as the scheduler reports it
	// ("0:15"); empty when the source does not say.
	ExitCode string
	// Nodes is the job's node list as the scheduler writes it.
	Nodes string
	// Source names the command that answered (squeue, sacct, qstat).
	Source string
}

// String renders the state for messages: "job 12 TIMEOUT (the job
// reached its time limit (--time); reason TimeLimit; exit code 0:15;
// nodes n[1-2])".
func (s State) String() string {
	var parts []string
	if s.Meaning != "" {
		parts = append(parts, s.Meaning)
	}
	if s.Reason != "" && s.Reason != "None" {
		parts = append(parts, "reason "+s.Reason)
	}
	if s.ExitCode != "" {
		parts = append(parts, "exit code "+s.ExitCode)
	}
	if s.Nodes != "" && s.Nodes != "None assigned" {
		parts = append(parts, "nodes "+s.Nodes)
	}
	out := fmt.Sprintf("job %s %s", s.ID, s.State)
	if len(parts) > 0 {
		out += " (" + strings.Join(parts, "; ") + ")"
	}
	return out
}

// Options are a scheduler's names and the launcher's timings.
type Options struct {
	// ScriptFile and OutputFile name the script that ran and the job's
	// output in raw/TEST (layout.SlurmJobScript, layout.SlurmJobOutput);
	// RanksExt ends each step's file of rank nodes (layout.SlurmRanksExt).
	ScriptFile, OutputFile, RanksExt string
	// RankVars are the variables, after the MPI ones, a task reads its
	// rank from (Slurm's SLURM_PROCID); NodeVar the one naming its node
	// (SLURMD_NODENAME), hostname when unset.
	RankVars []string
	NodeVar  string
	// Linger is how long background steps may run on after a step failed
	// before the script stops them; zero means launch.DefaultLinger.
	// Rounded up to seconds, as is StopGrace.
	Linger time.Duration
	// StopGrace is how long a step the script stops has between SIGTERM
	// and SIGKILL; zero means 10 s.
	StopGrace time.Duration
	// CancelCommand names the cancel command in messages ("scancel").
	CancelCommand string
	// Poll is the interval between job state queries; zero means 2 s.
	Poll time.Duration
	// PendingTimeout bounds the time a job may wait in the queue; zero:
	// no bound.
	PendingTimeout time.Duration
	// CancelWait bounds the wait for a cancelled job to end; zero: 2 min.
	CancelWait time.Duration
	// EvidenceWait bounds the wait for a signalled job (Signaller) to
	// collect its evidence and end; zero: DefaultEvidenceWait.
	EvidenceWait time.Duration
	// KillGrace is how long the script run inside an allocation has
	// between SIGTERM and SIGKILL; zero means 10 s.
	KillGrace time.Duration
	// Environ is the environment the script runs in inside an allocation;
	// nil means os.Environ().
	Environ []string
}

// Defaults of Options' zero durations.
const (
	DefaultPoll       = 2 * time.Second
	DefaultCancelWait = 2 * time.Minute
	DefaultKillGrace  = 10 * time.Second
)

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
