package cliopts

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/acceptance"
	"github.com/gpuaccept/gpuaccept/framework/localise"
)

// LocaliseFlags are the flags of localisation, shared by run and localise.
type LocaliseFlags struct{ acceptance.LocaliseRequest }

// Add adds the localisation flags to fs; cmd "run" also takes --localise
// and --no-localise.
func (lf *LocaliseFlags) Add(fs *pflag.FlagSet, cmd string) {
	r := &lf.LocaliseRequest
	if cmd == "run" {
		fs.BoolVar(&r.Always, "localise", false, "localise every multi-node test after the run, not only those that failed")
		fs.BoolVar(&r.Never, "no-localise", false, "do not localise multi-node tests that fail")
	}
	fs.StringVar(&r.Strategy, "localise-strategy", localise.Auto, fmt.Sprintf("how node pairs are chosen: %s (auto: every pair up to %d nodes, random matchings up to %d, bisection above)",
		strings.Join(localise.Strategies, ", "), localise.AllPairsMax, localise.MatchingMax))
	fs.Float64Var(&r.Tolerance, "localise-tolerance", localise.DefaultTolerance, "fraction below the reference (the upper quartile of a stage's runs) that makes a run slow")
	fs.IntVar(&r.Matchings, "localise-matchings", localise.DefaultMatchings, "random matchings drawn by the matching strategy")
	fs.Uint64Var(&r.Seed, "localise-seed", 0, "seed of the random matchings (the same seed repeats the same pairs)")
	fs.StringVar(&r.Suite, "localise-suite", "", `single-node suite run on every node (default: the SKU's "singlenode", else its first 1-node suite; "none" skips the stage)`)
	fs.StringArrayVar(&r.Tests, "localise-test", nil, "run only this test of the single-node suite on every node (repeatable)")
	fs.StringVar(&r.NICs, "nics", "", "comma-separated HCAs of every node (mlx5_0,...): ib_write_bw tests are then localised HCA pair by HCA pair")
	fs.IntVar(&r.Parallel, "localise-parallel", 0, "most localisation runs in flight at once (0: a whole round)")
}
