package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
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

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	var c common
	var test string
	var nodes, gpus int
	fs := newFlags("check", checkUsage, stderr)
	c.add(fs)
	c.addSign(fs)
	fs.StringVar(&test, "test", "", "test the logs are output of, e.g. nccl.all_reduce (gpuaccept list tests)")
	fs.IntVar(&nodes, "nodes", 0, "number of nodes the logs ran on (required)")
	fs.IntVar(&gpus, "gpus-per-node", 0, "GPUs per node the logs ran on (required)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, usageError{err}
	}
	if err := validFormat(c.format); err != nil {
		return exitUsage, err
	}
	if c.sku == "" || test == "" {
		return exitUsage, usageError{errors.New("--sku and --test are required")}
	}
	if n := len(flagValues(args, "test")); n > 1 {
		// A string flag keeps its last value: the logs of the others
		// would be judged as that test's.
		return exitUsage, usageError{fmt.Errorf("--test given %d times: check judges the logs of one test; run it once per test", n)}
	}
	if fs.NArg() == 0 {
		return exitUsage, usageError{errors.New("no LOGFILE given")}
	}
	if c.signKey != "" && c.out == "" {
		return exitUsage, usageError{errors.New("--sign-key signs a results folder: give --out DIR")}
	}
	if err := c.loadKey(); err != nil {
		return exitUsage, err
	}
	s, err := c.getSKU(stderr)
	if err != nil {
		return exitUsage, err
	}
	r, err := acceptance.Resolve(acceptance.Request{Command: acceptance.CommandCheck, SKU: s, Nodes: nodes, GPUsPerNode: gpus})
	if err != nil {
		return exitUsage, usageError{err}
	}
	host := c.host()
	defer host.Close()
	ctx, stop := signalContext()
	defer stop()
	c.ctx = ctx
	if err := acceptance.KnownTest(ctx, host, test); err != nil {
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
	res, err := runner.CheckInto(ctx, host, s, test, r.Topology, fs.Args(), getVersion(), dir, baseline)
	if err != nil {
		return exitUsage, usageError{err}
	}
	return c.finish(res, s, stdout, stderr)
}
