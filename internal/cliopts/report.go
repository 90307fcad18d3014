package cliopts

import (
	"fmt"
	"io"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// MayRebuild says whether report may write the folder's reports and sign
// it off (signoff.MayRebuild), printing what re-judging found. The exit
// code is 2: a folder that is not the sign-off it was is bad input, which
// CI must not read as faulty hardware (1).
func (c *Common) MayRebuild(dir string, run *result.Run, s *sku.SKU, stderr io.Writer) (int, error) {
	host := c.Host()
	defer host.Close()
	ctx, stop := SignalContext()
	defer stop()
	diffs, err := signoff.MayRebuild(ctx, host, dir, run, s, c.Key != nil)
	for _, d := range diffs {
		fmt.Fprintf(stderr, "REJUDGED %s\n", d)
	}
	if err != nil {
		return result.ExitUsage, err
	}
	return result.ExitPass, nil
}

// LoadRun reads the run a results folder holds (resultsdir.LoadFolder)
// and keeps the folder it recorded in c, so the reports rebuilt show it as
// the run did (gpuaccept report).
func (c *Common) LoadRun(dir string) (*result.Run, error) {
	run, recorded, err := resultsdir.LoadFolder(dir)
	if err != nil {
		return nil, err
	}
	c.Recorded = recorded
	return run, nil
}

// SlurmReport prints the one line of health --slurm-check and returns its
// exit code; the results folder is written (and signed off) only when
// --out asked for it.
func (c *Common) SlurmReport(res *result.Run, s *sku.SKU, stdout io.Writer) (int, error) {
	line, code := acceptance.HealthLine(res, acceptance.SlurmNode())
	fmt.Fprintln(stdout, line)
	if !c.OutDeleted {
		if _, err := c.Finish(res, s, io.Discard, io.Discard); err != nil {
			return result.ExitUsage, err
		}
	}
	return code, nil
}
