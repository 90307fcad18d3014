package acceptance

// This file: gpuaccept check, existing logs of one test judged offline.

import (
	"context"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
)

// CheckOptions are gpuaccept check's: the logs of one test and the scope
// they ran at, judged against the SKU's baseline.
type CheckOptions struct {
	SKU *sku.SKU
	// Test is the test the logs are output of (--test).
	Test string
	// Nodes and GPUsPerNode are the scope the logs ran at, both needed.
	Nodes, GPUsPerNode int
	// Files are the LOGFILEs (runner.Check groups them into runs).
	Files []string
	// Out is --out: a results folder to make of the logs ("": none).
	// Baseline is the SKU file's content, kept there.
	Out      string
	Baseline []byte
	Plugins  RecordPlugins
	Version  string
}

// Check judges existing logs offline (runner.CheckInto) after the scope
// (Resolve), the test (KnownTest) and the SKU against its plugins
// (skucheck.Check) are checked, in that order, and --out is a folder a
// run could write (ResultsDir). Every error before the logs are read is
// the command line's.
func Check(ctx context.Context, o CheckOptions) (*result.Run, error) {
	r, err := Resolve(Request{Command: CommandCheck, SKU: o.SKU, Nodes: o.Nodes, GPUsPerNode: o.GPUsPerNode})
	if err != nil {
		return nil, err
	}
	if err := KnownTest(ctx, o.Plugins, o.Test); err != nil {
		return nil, err
	}
	if err := skucheck.Check(ctx, o.Plugins, o.SKU); err != nil {
		return nil, err
	}
	var dir string
	var baseline []byte
	if o.Out != "" {
		if dir, err = ResultsDir(o.Out, ""); err != nil {
			return nil, err
		}
		baseline = o.Baseline
	}
	return runner.CheckInto(ctx, o.Plugins, o.SKU, o.Test, r.Topology, o.Files, o.Version, dir, baseline)
}
