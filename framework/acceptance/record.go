package acceptance

// This file: the runs "gpuaccept baseline record" records from, read into
// samples (framework/record makes the entries).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/record"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// RecordPlugins is what recording needs of the plugin host
// (*pluginapi.Host): parse the logs, and know the tests they name.
type RecordPlugins interface {
	runner.Plugins
	TestCatalog
}

// RecordSamples reads the RUN arguments of baseline record (results
// folders, raw folders, TEST=LOGFILE or TEST@NxG=LOGFILE) into samples,
// each with the run it is part of (runsOf), and counts those runs. Logs
// and raw folders are parsed by their plugins and gated as check does,
// against no baseline; topo is the scope they ran at (--nodes and
// --gpus-per-node; zero: not given). Errors name the RUN at fault.
func RecordSamples(ctx context.Context, plugins RecordPlugins, s *sku.SKU, topo plan.Topology, inputs []string, version string) ([]record.Sample, int, error) {
	var samples []record.Sample
	runs := runsOf(inputs)
	for _, in := range inputs {
		got, err := loadSamples(ctx, plugins, s, topo, in, version)
		if err != nil {
			return nil, 0, err
		}
		for i := range got {
			got[i].Run = runs[in]
		}
		samples = append(samples, got...)
	}
	return samples, countRuns(runs), nil
}

// runsOf names the run each RUN argument is part of, as the file's header
// and the summary count them. A folder is one run. The logs of one run
// (TEST=LOGFILE) are: those of a results folder's raw/TEST/ (or a raw
// folder's TEST/), that folder; those of one other folder, that folder;
// but two logs of one test in one folder are two runs, each its file.
func runsOf(inputs []string) map[string]string {
	runs := map[string]string{}
	tests := map[[2]string]int{}
	for _, in := range inputs {
		test, file, ok := strings.Cut(in, "=")
		if !ok || !strings.Contains(test, ".") {
			runs[in] = in
			continue
		}
		test, _, _ = strings.Cut(test, "@")
		dir := filepath.Dir(file)
		if filepath.Base(dir) == test {
			dir = filepath.Dir(dir)
			if filepath.Base(dir) == layout.Raw {
				dir = filepath.Dir(dir)
			}
		}
		runs[in] = dir
		tests[[2]string{dir, test}]++
	}
	for _, in := range inputs {
		test, file, ok := strings.Cut(in, "=")
		test, _, _ = strings.Cut(test, "@")
		if ok && tests[[2]string{runs[in], test}] > 1 {
			runs[in] = file
		}
	}
	return runs
}

func countRuns(runs map[string]string) int {
	seen := map[string]bool{}
	for _, r := range runs {
		seen[r] = true
	}
	return len(seen)
}

// CountTests counts the tests, each at its scope, samples hold, for
// record's summary line.
func CountTests(ss []record.Sample) int {
	seen := map[string]bool{}
	for _, s := range ss {
		seen[s.Test+" "+s.Scope.String()] = true
	}
	return len(seen)
}

// loadSamples reads one RUN argument of record into samples.
func loadSamples(ctx context.Context, host RecordPlugins, s *sku.SKU, topo plan.Topology, in, version string) ([]record.Sample, error) {
	if test, file, ok := strings.Cut(in, "="); ok && strings.Contains(test, ".") {
		if name, scope, ok := strings.Cut(test, "@"); ok {
			sc, err := plan.ParseScope(scope)
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", in, err)
			}
			test, topo = name, plan.Topology{Scope: sc}
		}
		files := []string{file}
		if js := strings.TrimSuffix(file, filepath.Ext(file)) + ".json"; js != file && regularFile(js) {
			files = append(files, js)
		}
		return fromLogs(ctx, host, s, test, topo, files, file, version)
	}
	fi, err := os.Stat(in)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", in, err)
	}
	if !fi.IsDir() || regularFile(filepath.Join(in, layout.Results)) {
		return record.Load(in)
	}
	raw := in
	if d := filepath.Join(in, layout.Raw); isDir(d) {
		raw = d
	}
	folders, err := resultsdir.Walk(raw)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", in, err)
	}
	var out []record.Sample
	for _, f := range folders {
		if f.Attempt > 0 {
			continue // an earlier attempt of a retried test: no verdict stands on it
		}
		dir := filepath.Join(raw, f.Name)
		logs, _ := filepath.Glob(filepath.Join(dir, "*"+layout.LogExt))
		if len(logs) == 0 {
			continue
		}
		got, err := fromLogs(ctx, host, s, f.Test, topo, logs, dir, version)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("run %s: no %s and no raw outputs (TEST/STEP%s) in it", in, layout.Results, layout.LogExt)
	}
	return out, nil
}

// fromLogs parses logs of one test with its plugin, as check does, judged
// against no baseline: only the parse and the correctness gates decide
// whether the run may be recorded.
func fromLogs(ctx context.Context, host RecordPlugins, s *sku.SKU, test string, topo plan.Topology, files []string, origin, version string) ([]record.Sample, error) {
	if topo.Nodes < 1 || topo.GPUsPerNode < 1 {
		return nil, fmt.Errorf("run %s: raw outputs and logs need --nodes and --gpus-per-node (the scope they ran at)", origin)
	}
	if err := KnownTest(ctx, host, test); err != nil {
		return nil, fmt.Errorf("run %s: %w", origin, err)
	}
	bare := &sku.SKU{Name: s.Name, GPU: s.GPU}
	run, err := runner.Check(ctx, host, bare, test, topo, files, version)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", origin, err)
	}
	run.Started = time.Time{} // a log carries no date; the time of parsing is not the run's
	got, err := record.FromRun(run, func(result.Test) string { return origin })
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", origin, err)
	}
	return got, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func regularFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}
