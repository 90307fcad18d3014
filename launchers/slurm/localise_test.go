package slurm

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// The example batch script on 2 nodes of partition loc: gpuaccept runs
// seed 004's rccl all_reduce inside the allocation, the stand-in replays
// the half-speed copy whenever the second node takes part, so the test
// fails; gpuaccept then localises it inside the same allocation, on the
// nodes the ranks reported, running the single-node suite on each node
// side by side (steps pinned to their node), and names the second node.
func TestClusterLocaliseInsideAllocation(t *testing.T) {
	needCluster(t)
	loc := testenv.Need(t, "GPUACCEPT_SLURM_LOC_PARTITION", "slurm")
	nodes := strings.Split(testenv.Need(t, "GPUACCEPT_SLURM_LOC_NODES", "slurm"), ",")[:2]
	bin, bindir := binaries(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "results")
	script, err := filepath.Abs("../../examples/slurm/gpuaccept.sbatch")
	assert.NilError(t, err)
	recs := map[string]string{}
	for _, v := range []struct{ name, src string }{{"healthy", "mi355x-seed004"}, {"degraded", "mi355x-seed004-degraded"}} {
		for n, scope := range map[string]string{"1": "singlenode", "2": "multinode"} {
			src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "recordings", v.src, scope, layout.Raw))
			assert.NilError(t, err)
			assert.NilError(t, os.MkdirAll(filepath.Join(dir, v.name), 0o755))
			assert.NilError(t, os.Symlink(src, filepath.Join(dir, v.name, n)))
		}
		recs[v.name] = filepath.Join(dir, v.name, "{nodes}")
	}
	args := []string{"--parsable", "--nodes=2", "--partition=" + loc, "--nodelist=" + strings.Join(nodes, ","), "--chdir=" + dir,
		"--export=ALL,GPUACCEPT=" + bin + ",SKU=mi355x,SUITE=multinode,OUT=" + out, script,
		"--test", "rccl.all_reduce", "--localise-test", "rccl.all_reduce", "--slurm-gpus", "none", "--slurm-mpi", "mpirun",
		"--param", "bindir=" + bindir, "--param", "env.STANDIN_RECORDINGS=" + recs["healthy"],
		"--param", "env.STANDIN_DEGRADED_RECORDINGS=" + recs["degraded"], "--param", "env.STANDIN_DEGRADE_HOST=" + nodes[1]}
	args = append(args, mpiArgs...)
	so, err := exec.Command("sbatch", args...).CombinedOutput()
	assert.NilError(t, err, string(so))
	id, err := parseJobID(string(so))
	assert.NilError(t, err)
	st, why := follow(id, 3*time.Minute, 300*time.Millisecond)
	jobOut, _ := os.ReadFile(filepath.Join(dir, "gpuaccept-"+id+".out"))
	assert.Equal(t, why, "", string(jobOut))
	// The script execs gpuaccept: its exit code 1 (a test failed) is the job's.
	assert.Equal(t, st.ExitCode, "1:0", string(jobOut))

	data, err := os.ReadFile(filepath.Join(out, layout.Results))
	assert.NilError(t, err, string(jobOut))
	var run result.Run
	assert.NilError(t, json.Unmarshal(data, &run))
	assert.Equal(t, run.Tests[0].Status, result.Fail)
	assert.Equal(t, len(run.Localisations), 1, string(jobOut))
	lz := run.Localisations[0]
	assert.DeepEqual(t, lz.Hosts, nodes)
	var named []string
	for _, s := range lz.Suspects {
		named = append(named, s.Name())
	}
	assert.DeepEqual(t, named, []string{nodes[1]})
	for _, r := range lz.Stages[0].Runs {
		// Each per-node run ran on its own node: its ranks say so.
		raw, err := os.ReadFile(filepath.Join(out, r.Dir, layout.Results))
		assert.NilError(t, err)
		var sub result.Run
		assert.NilError(t, json.Unmarshal(raw, &sub))
		assert.Assert(t, len(sub.Tests[0].RankHosts) > 0, "no rank hosts in %s", r.Dir)
		for _, hs := range sub.Tests[0].RankHosts {
			for _, h := range hs {
				assert.Equal(t, h, r.Hosts[0], "per-node run of %s", r.Hosts[0])
			}
		}
	}
}
