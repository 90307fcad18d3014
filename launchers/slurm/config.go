package slurm

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/hosts"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// MPI start choices (--slurm-mpi).
const (
	// MPIAuto follows the cluster: srun --mpi=pmix or pmi2 when slurm.conf's
	// MpiDefault names one of them, else mpirun inside the allocation.
	MPIAuto = "auto"
	// MPIMpirun starts MPI steps with Open MPI's mpirun inside the
	// allocation (it learns the nodes from Slurm and starts its daemons with
	// srun).
	MPIMpirun = "mpirun"
	// MPIPMIx starts MPI steps with srun --mpi=pmix.
	MPIPMIx = "pmix"
	// MPIPMI2 starts MPI steps with srun --mpi=pmi2.
	MPIPMI2 = "pmi2"
)

// Modes (--slurm-mode).
const (
	// ModeAuto runs inside the allocation when SLURM_JOB_ID is set, else
	// submits a batch job per test.
	ModeAuto = "auto"
	// ModeSubmit submits one batch job per test with sbatch and follows it.
	ModeSubmit = "submit"
	// ModeAllocation runs the steps with srun (or mpirun) inside the
	// allocation named by SLURM_JOB_ID, as gpuaccept called from a batch
	// script does.
	ModeAllocation = "allocation"
)

// GPU directive styles (--slurm-gpus).
const (
	GPUsPerNode = "gpus-per-node" // #SBATCH --gpus-per-node=G
	GPUsGres    = "gres"          // #SBATCH --gres=gpu:G
	GPUsNone    = "none"          // no GPU directive (nodes without GPU GRES)
)

// Config is the launcher's configuration, from the command line.
type Config struct {
	// Partition, Account, QOS and Reservation become the #SBATCH
	// directives of the same names; empty ones are left out.
	Partition, Account, QOS, Reservation string
	// Time is the job's time limit: a Go duration ("30m") or Slurm's own
	// forms ("30", "1:00:00", "1-0"). Empty: the test's timeout plus
	// TimeSlack, rounded up to minutes; no limit when there is no timeout.
	Time string
	// SbatchArgs are extra directives, one option each ("--constraint=ib").
	SbatchArgs []string
	// ContainerImage and ContainerMounts are pyxis' srun options; they need
	// an srun MPI start (pmix or pmi2).
	ContainerImage, ContainerMounts string
	// MPI is how MPI steps start: MPIAuto, MPIMpirun, MPIPMIx or MPIPMI2.
	MPI string
	// Mode is ModeAuto, ModeSubmit or ModeAllocation.
	Mode string
	// GPUs is the GPU directive style: GPUsPerNode, GPUsGres or GPUsNone.
	GPUs string
	// Exclusive asks for whole nodes (#SBATCH --exclusive).
	Exclusive bool
	// Poll is the interval between job state queries; zero means 2 s.
	Poll time.Duration
	// PendingTimeout bounds the time a job may wait in the queue; zero:
	// no bound (the test's timeout counts from the job's start).
	PendingTimeout time.Duration
	// MPIArgs are extra mpirun arguments (--mpi-arg).
	MPIArgs []string
	// Starter is the mpirun of MPI steps under MPIMpirun (--mpi-flavor);
	// nil means Open MPI's. Under pmix and pmi2, srun starts them.
	Starter rankstart.Starter
	// Start is what every MPI step's starter line starts from
	// (rankstart.FromLaunch: the site's mpi.args, bind_to and mca, HCOLL
	// off for Open MPI; under srun the MCA settings go in the
	// environment); nil: nothing but MPIArgs.
	Start *rankstart.Options
	// Hosts, when set, become the job's node list (--nodelist).
	Hosts []string
}

// TimeSlack is added to a test's timeout to make the job's default time
// limit, so gpuaccept's own timeout (which cancels cleanly and keeps the
// outputs) fires before Slurm's.
const TimeSlack = 5 * time.Minute

// defaults is the Config the flags start from.
func defaults() Config {
	return Config{MPI: MPIAuto, Mode: ModeAuto, GPUs: GPUsPerNode, Exclusive: true, Poll: 2 * time.Second}
}

// Bind implements launch.Config: the launcher's own flags.
func (c *Config) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&c.Partition, "partition", c.Partition, "partition to submit to (#SBATCH --partition)")
	fs.StringVar(&c.Account, "account", c.Account, "account to charge (#SBATCH --account)")
	fs.StringVar(&c.QOS, "qos", c.QOS, "quality of service (#SBATCH --qos)")
	fs.StringVar(&c.Reservation, "reservation", c.Reservation, "reservation to run in (#SBATCH --reservation)")
	fs.StringVar(&c.Time, "time", c.Time, "job time limit, e.g. 30m or 1:00:00 (default: --timeout plus 5 minutes)")
	fs.StringArrayVar(&c.SbatchArgs, "sbatch-arg", c.SbatchArgs, "extra #SBATCH directive, one option per flag (repeatable), e.g. --sbatch-arg=--constraint=ib")
	fs.StringVar(&c.ContainerImage, "container-image", c.ContainerImage, "run the steps in this container image with pyxis (srun --container-image); needs --slurm-mpi pmix or pmi2")
	fs.StringVar(&c.ContainerMounts, "container-mounts", c.ContainerMounts, "pyxis mounts, SRC:DST[,SRC:DST...] (srun --container-mounts)")
	fs.StringVar(&c.MPI, "slurm-mpi", c.MPI, "how MPI steps start: auto (the cluster's MpiDefault if pmix/pmi2, else mpirun), mpirun (of --mpi-flavor), pmix or pmi2 (srun)")
	fs.StringVar(&c.Mode, "slurm-mode", c.Mode, "submit (sbatch per test), allocation (srun inside $SLURM_JOB_ID) or auto (allocation when SLURM_JOB_ID is set)")
	fs.StringVar(&c.GPUs, "slurm-gpus", c.GPUs, "GPU directive: gpus-per-node (--gpus-per-node=G), gres (--gres=gpu:G) or none")
	fs.BoolVar(&c.Exclusive, "slurm-exclusive", c.Exclusive, "ask for whole nodes (#SBATCH --exclusive)")
	fs.DurationVar(&c.Poll, "slurm-poll", c.Poll, "interval between job state queries")
	fs.DurationVar(&c.PendingTimeout, "slurm-pending-timeout", c.PendingTimeout, "cancel a job still queued after this long (0: wait; --timeout counts from the job's start)")
}

// Build implements launch.Config: o's hosts become the job's node list,
// --mpi-flavor the mpirun of --slurm-mpi mpirun, and every value is
// checked before anything is submitted.
func (c *Config) Build(o launch.Options) (launch.Launcher, error) {
	cfg := *c
	cfg.Hosts = o.Hosts
	st, base, err := rankstart.FromLaunch(o)
	if err != nil {
		return nil, fmt.Errorf("launcher slurm: %w", err)
	}
	cfg.Starter, cfg.Start = st, &base
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Launcher{Config: cfg}, nil
}

// word is what a directive value may hold: Slurm names (partitions,
// accounts, QOS, reservations, node lists) never need more, and nothing in
// it means anything to a shell or to sbatch's directive parser.
var word = regexp.MustCompile(`^[A-Za-z0-9_.,+:@%=/\[\]-]+$`)

// slurmTime matches Slurm's time limit forms: minutes, minutes:seconds,
// hours:minutes:seconds, days-hours[:minutes[:seconds]], and the unlimited
// spellings (which jobMinutes refuses).
var slurmTime = regexp.MustCompile(`^([0-9]+(-[0-9]+)?(:[0-9]+){0,2}|UNLIMITED|unlimited|infinite|INFINITE)$`)

// noLimit matches the time limits Slurm reads as none: the unlimited
// spellings, and zero in any form (sbatch(1), --time: "A time limit of
// zero requests that no time limit be imposed").
var noLimit = regexp.MustCompile(`^(0+(-0+)?(:0+){0,2}|UNLIMITED|unlimited|infinite|INFINITE)$`)

// Validate reports the first setting that cannot work, naming its flag.
// Values are checked, not quoted: a partition or host holding shell or
// directive metacharacters is rejected, never written into a script.
func (c Config) Validate() error {
	for _, f := range []struct{ flag, v string }{{"partition", c.Partition}, {"account", c.Account}, {"qos", c.QOS}, {"reservation", c.Reservation}} {
		if f.v != "" && !word.MatchString(f.v) {
			return fmt.Errorf("--%s %q: only letters, digits and _.,+:@%%=/[]- are allowed in Slurm names", f.flag, f.v)
		}
	}
	if c.Time != "" {
		if _, err := jobMinutes(c.Time); err != nil {
			return err
		}
	}
	for _, a := range c.SbatchArgs {
		if !strings.HasPrefix(a, "-") || strings.ContainsAny(a, " \t\r\n\x00\"'\\") {
			return fmt.Errorf("--sbatch-arg %q: want one sbatch option such as --constraint=ib, without blanks, quotes or backslashes", a)
		}
		if a == "-t" || strings.HasPrefix(a, "-t") && !strings.HasPrefix(a, "--") || a == "--time" || strings.HasPrefix(a, "--time=") {
			// A second --time would override the checked one (a zero
			// one lifting the limit).
			return fmt.Errorf("--sbatch-arg %q: give the job's time limit with --time, which is checked", a)
		}
		for _, r := range a {
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("--sbatch-arg %q: control characters are not allowed", a)
			}
		}
	}
	for _, f := range []struct{ flag, v string }{{"container-image", c.ContainerImage}, {"container-mounts", c.ContainerMounts}} {
		if strings.ContainsAny(f.v, "\r\n\x00") {
			return fmt.Errorf("--%s %q: line breaks are not allowed", f.flag, f.v)
		}
	}
	switch c.MPI {
	case MPIAuto, MPIMpirun, MPIPMIx, MPIPMI2:
	default:
		return fmt.Errorf("--slurm-mpi %q: want auto, mpirun, pmix or pmi2", c.MPI)
	}
	switch c.Mode {
	case ModeAuto, ModeSubmit, ModeAllocation:
	default:
		return fmt.Errorf("--slurm-mode %q: want auto, submit or allocation", c.Mode)
	}
	switch c.GPUs {
	case GPUsPerNode, GPUsGres, GPUsNone:
	default:
		return fmt.Errorf("--slurm-gpus %q: want gpus-per-node, gres or none", c.GPUs)
	}
	if c.ContainerImage != "" && c.MPI == MPIMpirun {
		return fmt.Errorf("--container-image runs the steps through pyxis' srun, which cannot start ranks under mpirun: use --slurm-mpi pmix or pmi2")
	}
	if c.ContainerMounts != "" && c.ContainerImage == "" {
		return fmt.Errorf("--container-mounts needs --container-image")
	}
	for _, f := range []struct {
		flag string
		v    time.Duration
	}{{"slurm-poll", c.Poll}, {"slurm-pending-timeout", c.PendingTimeout}} {
		if f.v < 0 {
			return fmt.Errorf("--%s %s: want a duration of zero or more", f.flag, f.v)
		}
	}
	if err := rankstart.AcrossHosts(c.Starter); err != nil {
		// The starter behind --slurm-mpi mpirun; srun is --slurm-mpi's.
		return fmt.Errorf("--mpi-flavor: %w", err)
	}
	for _, h := range c.Hosts {
		if !hosts.Valid(h) {
			return fmt.Errorf("host %q: not a valid node name", h)
		}
	}
	return nil
}

// jobMinutes turns a --time value into what #SBATCH --time takes: Go
// durations become whole minutes (rounded up), Slurm's forms pass as given.
// A limit Slurm reads as none (0, UNLIMITED) is refused: a job that hangs
// would hold its nodes until someone cancels it, as --timeout has no "no
// limit" either.
func jobMinutes(v string) (string, error) {
	if noLimit.MatchString(v) {
		return "", fmt.Errorf("--time %q: no time limit (Slurm reads zero and UNLIMITED as none); give a limit such as 2h or 1:00:00, or leave --time out for --timeout plus %s", v, TimeSlack)
	}
	if slurmTime.MatchString(v) {
		return v, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return "", fmt.Errorf("--time %q: want a duration such as 30m or 2h, or Slurm's form (minutes, H:MM:SS, D-HH)", v)
	}
	return fmt.Sprint(int(math.Ceil(d.Minutes()))), nil
}
