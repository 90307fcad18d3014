package signoff

import (
	"context"
	"fmt"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// MayRebuild says whether "gpuaccept report" may write the reports of
// the results folder dir (holding run) and sign it off: nil when it may.
// A folder that no longer matches the manifest it has keeps its files as
// they are (rewriting them would hide what changed); a folder signed
// whose manifest is gone is not signed off again; and one to be signed
// now (signing, with s its kept baseline; nil: none) is signed only when
// its raw outputs, judged again against s, give the verdicts its journal
// recorded: the differences are returned with the error, one a line.
func MayRebuild(ctx context.Context, plugins runner.Plugins, dir string, run *result.Run, s *sku.SKU, signing bool) ([]string, error) {
	_, merr := os.Lstat(filepath.Join(dir, layout.Manifest))
	_, serr := os.Lstat(filepath.Join(dir, layout.SigFile))
	switch {
	case merr == nil:
		m, err := manifest.Read(dir)
		if err != nil {
			return nil, err
		}
		problems, err := manifest.Check(dir, m)
		if err != nil {
			return nil, err
		}
		if len(problems) > 0 {
			var ps []string
			for _, p := range problems {
				ps = append(ps, p.String())
			}
			return nil, fmt.Errorf("not rebuilt: %s no longer matches the %s it has (%s); its files are left as they are (gpuaccept verify %s names every difference)", dir, layout.Manifest, strings.Join(ps, "; "), dir)
		}
	case serr == nil:
		return nil, fmt.Errorf("not rebuilt: %s holds %s but no %s: a signed folder whose manifest was removed is not signed off again", dir, layout.SigFile, layout.Manifest)
	case signing && s != nil:
		if diffs := runner.Rejudge(ctx, plugins, s, dir, run); len(diffs) > 0 {
			return diffs, fmt.Errorf("not signed: the raw outputs of %s, judged again against its baseline copy, do not give the verdicts its journal recorded (%s)", dir, result.Count(len(diffs), "difference"))
		}
	}
	return nil, nil
}
