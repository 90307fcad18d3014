package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/argmask"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
)

const checkUsage = `Usage: gpuaccept check --sku SKU --test TEST --nodes N --gpus-per-node G [flags] LOGFILE...

Judges existing output of any test a plugin offers (nccl-tests and
rccl-tests text or -J JSON, ib_write_bw text or JSON, Mori-EP logs;
torchbench.py, hipblaslt-bench/rocblas-bench CSV and RVS gst for
gemm.matmul; nvbandwidth and TransferBench for hostlink.pcie/p2p;
nvidia-smi -q -x or -q text, --query-gpu CSV, nvlink --status, dmesg,
dcgmi diag -j or its table, ibstat, amd-smi static/metric --json and
rocm-smi --json for health.node, pasted with a shell prompt or kubectl's
labels or not; see gpuaccept list tests) against the SKU's
baseline without running anything. One --test per check.

LOGFILEs are grouped into runs, each judged as one test result:
  - a JSON file joins the text log with the same name stem (run.log +
    run.json); a log from a results folder finds its JSON in STEP.files/;
  - a paired test's sides in one folder are one run, as a results folder's
    raw/TEST/ keeps them: server.N.log and client.N.log (pair N), or any
    logs the folder's outputs.json gives a server or client role; two
    logs in a folder named otherwise (ibwb-server.log, ibwb-client.log)
    pair when one holds the server's ready line ("Waiting for client to
    connect") and the other does not;
  - every other file is a run of its own.
A LOGFILE ending in .gz is read decompressed (gzip), and grouped as the
plain file would be (run.log.gz with run.json.gz); - reads standard input
once (gzip or not), named "stdin". One input may hold at most 4 GiB once
read: past that, or when a .gz is not gzip or is cut short, check stops
with an error naming the file (exit 2).
A log from a results folder is judged with how its step ended there (exit
code, host: raw/TEST/outputs.json). With --out DIR the results folder gets
the logs under raw/ as they were read (decompressed; standard input as
raw/TEST/stdin), a manifest, the baseline copy and a journal, so that
gpuaccept verify DIR checks it like a run's; it keeps at most 1 GiB of
logs in all, as read (past that, check --out stops before copying
anything, exit 2: judge them without --out).
`

// checkOptions are the flags of check.
type checkOptions struct {
	c           common
	test        string
	nodes, gpus int
	args        []string
	fs          *pflag.FlagSet
}

func newCheckOptions(stderr io.Writer) *checkOptions {
	o := &checkOptions{}
	fs := newFlags("check", checkUsage, stderr)
	o.fs = fs
	o.c.add(fs)
	o.c.addSign(fs)
	fs.StringVar(&o.test, "test", "", "test the logs are output of, e.g. nccl.all_reduce (gpuaccept list tests)")
	fs.IntVar(&o.nodes, "nodes", 0, "number of nodes the logs ran on (required)")
	fs.IntVar(&o.gpus, "gpus-per-node", 0, "GPUs per node the logs ran on (required)")
	return o
}

// Validate checks the flags alone, before anything is read.
func (o *checkOptions) Validate() error {
	if err := validFormat(o.c.format); err != nil {
		return err
	}
	if o.c.sku == "" || o.test == "" {
		return usageError{errors.New("--sku and --test are required")}
	}
	if n := len(argmask.FlagValues(o.args, "test")); n > 1 {
		// A string flag keeps its last value: the logs of the others
		// would be judged as that test's.
		return usageError{fmt.Errorf("--test given %d times: check judges the logs of one test; run it once per test", n)}
	}
	if o.fs.NArg() == 0 {
		return usageError{errors.New("no LOGFILE given")}
	}
	if o.c.signKey != "" && o.c.out == "" {
		return usageError{errors.New("--sign-key signs a results folder: give --out DIR")}
	}
	return o.c.loadKey()
}

// cmdCheck is the check command: flags -> checkOptions ->
// acceptance.Resolve -> runner.CheckInto -> signoff.Finish.
func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	o := newCheckOptions(stderr)
	if err := o.fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	o.args = args
	if err := o.Validate(); err != nil {
		return exitUsage, err
	}
	c := &o.c
	s, err := c.getSKU(stderr)
	if err != nil {
		return exitUsage, err
	}
	r, err := acceptance.Resolve(acceptance.Request{Command: acceptance.CommandCheck, SKU: s, Nodes: o.nodes, GPUsPerNode: o.gpus})
	if err != nil {
		return exitUsage, usageError{err}
	}
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()
	c.ctx = ctx
	if err := acceptance.KnownTest(ctx, host, o.test); err != nil {
		return exitUsage, usageError{err}
	}
	if err := skucheck.Check(ctx, host, s); err != nil {
		return exitUsage, usageError{err}
	}
	var dir string
	var baseline []byte
	if c.out != "" {
		if dir, err = resultsDir(c.out, ""); err != nil {
			return exitUsage, err
		}
		if baseline, err = c.skuFile(s); err != nil {
			return exitUsage, err
		}
	}
	res, err := runner.CheckInto(ctx, host, s, o.test, r.Topology, o.fs.Args(), getVersion(), dir, baseline)
	if err != nil {
		return exitUsage, usageError{err}
	}
	return c.finish(res, s, stdout, stderr)
}
