package slurm

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/hosts"
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
	// Hosts, when set, become the job's node list (--nodelist).
	Hosts []string
}

// TimeSlack is added to a test's timeout to make the job's default time
// limit, so gpuaccept's own timeout (which cancels cleanly and keeps the
// outputs) fires before Slurm's.
const TimeSlack = 5 * time.Minute

// addFlags registers the launcher's flags; names are shared by all launchers.
func addFlags(fs *pflag.FlagSet) {
	fs.String("partition", "", "slurm: partition to submit to (#SBATCH --partition)")
	fs.String("account", "", "slurm: account to charge (#SBATCH --account)")
	fs.String("qos", "", "slurm: quality of service (#SBATCH --qos)")
	fs.String("reservation", "", "slurm: reservation to run in (#SBATCH --reservation)")
	fs.String("time", "", "slurm: job time limit, e.g. 30m or 1:00:00 (default: --timeout plus 5 minutes)")
	fs.StringArray("sbatch-arg", nil, "slurm: extra #SBATCH directive, one option per flag (repeatable), e.g. --sbatch-arg=--constraint=ib")
	fs.String("container-image", "", "slurm: run the steps in this container image with pyxis (srun --container-image); needs --slurm-mpi pmix or pmi2")
	fs.String("container-mounts", "", "slurm: pyxis mounts, SRC:DST[,SRC:DST...] (srun --container-mounts)")
	fs.String("slurm-mpi", MPIAuto, "slurm: how MPI steps start: auto (the cluster's MpiDefault if pmix/pmi2, else mpirun), mpirun, pmix or pmi2")
	fs.String("slurm-mode", ModeAuto, "slurm: submit (sbatch per test), allocation (srun inside $SLURM_JOB_ID) or auto (allocation when SLURM_JOB_ID is set)")
	fs.String("slurm-gpus", GPUsPerNode, "slurm: GPU directive: gpus-per-node (--gpus-per-node=G), gres (--gres=gpu:G) or none")
	fs.Bool("slurm-exclusive", true, "slurm: ask for whole nodes (#SBATCH --exclusive)")
	fs.Duration("slurm-poll", 2*time.Second, "slurm: interval between job state queries")
	fs.Duration("slurm-pending-timeout", 0, "slurm: cancel a job still queued after this long (0: wait; --timeout counts from the job's start)")
}

// configFromFlags reads the flags addFlags registered; fs may be nil
// (defaults). The caller validates, once the hosts are set too.
func configFromFlags(fs *pflag.FlagSet) (Config, error) {
	c := Config{MPI: MPIAuto, Mode: ModeAuto, GPUs: GPUsPerNode, Exclusive: true, Poll: 2 * time.Second}
	if fs == nil {
		return c, nil
	}
	var err error
	str := func(name string, dst *string) {
		if err == nil && fs.Lookup(name) != nil {
			*dst, err = fs.GetString(name)
		}
	}
	str("partition", &c.Partition)
	str("account", &c.Account)
	str("qos", &c.QOS)
	str("reservation", &c.Reservation)
	str("time", &c.Time)
	str("container-image", &c.ContainerImage)
	str("container-mounts", &c.ContainerMounts)
	str("slurm-mpi", &c.MPI)
	str("slurm-mode", &c.Mode)
	str("slurm-gpus", &c.GPUs)
	if err == nil && fs.Lookup("sbatch-arg") != nil {
		c.SbatchArgs, err = fs.GetStringArray("sbatch-arg")
	}
	if err == nil && fs.Lookup("slurm-exclusive") != nil {
		c.Exclusive, err = fs.GetBool("slurm-exclusive")
	}
	if err == nil && fs.Lookup("slurm-poll") != nil {
		c.Poll, err = fs.GetDuration("slurm-poll")
	}
	if err == nil && fs.Lookup("slurm-pending-timeout") != nil {
		c.PendingTimeout, err = fs.GetDuration("slurm-pending-timeout")
	}
	if err != nil {
		return c, fmt.Errorf("read slurm launcher flags: %w", err)
	}
	return c, nil
}

// word is what a directive value may hold: Slurm names (partitions,
// accounts, QOS, reservations, node lists) never need more, and nothing in
// it means anything to a shell or to sbatch's directive parser.
var word = regexp.MustCompile(`^[A-Za-z0-9_.,+:@%=/\[\]-]+$`)

// slurmTime matches Slurm's time limit forms: minutes, minutes:seconds,
// hours:minutes:seconds, days-hours[:minutes[:seconds]], and the unlimited
// spellings.
var slurmTime = regexp.MustCompile(`^([0-9]+(-[0-9]+)?(:[0-9]+){0,2}|UNLIMITED|unlimited|infinite|INFINITE)$`)

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
	for _, h := range c.Hosts {
		if !hosts.Valid(h) {
			return fmt.Errorf("host %q: not a valid node name", h)
		}
	}
	return nil
}

// jobMinutes turns a --time value into what #SBATCH --time takes: Go
// durations become whole minutes (rounded up), Slurm's forms pass as given.
func jobMinutes(v string) (string, error) {
	if slurmTime.MatchString(v) {
		return v, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return "", fmt.Errorf("--time %q: want a duration such as 30m or 2h, or Slurm's form (minutes, H:MM:SS, D-HH)", v)
	}
	return fmt.Sprint(int(math.Ceil(d.Minutes()))), nil
}
