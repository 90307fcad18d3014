package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

var localiseUsage = help("localise")

// localiseOnly is the localise command after its flags: it picks the
// suite's multi-node tests to localise (--test, or all not skipped), then
// localises them on the hosts given (acceptance.Localise) without a suite
// run before, and signs the folder off.
func localiseOnly(ctx context.Context, c *cliopts.Common, setup acceptance.Setup, only []string, stdout, stderr io.Writer) (int, error) {
	names, err := acceptance.LocaliseTests(setup.SKU, setup.Suite, only)
	if err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	run, err := acceptance.Localise(ctx, acceptance.LocaliseOptions{Setup: setup, Tests: names})
	if err != nil {
		return exitUsage, err
	}
	if setup.DryRun {
		return exitOK, nil
	}
	code, err := c.Finish(run, setup.SKU, stdout, stderr)
	fmt.Fprintf(stderr, "results: %s (report.html, junit.xml, results.json, localise/)\n", c.Out)
	return code, err
}
