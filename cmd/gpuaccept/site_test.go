package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

// A bad site file stops the run before anything, with exit code 2 and each
// problem's file, line and field.
func TestSiteFileProblems(t *testing.T) {
	p := writeFile(t, "site.yaml", "site: x\nmpi:\n  bind_to: everywhere\nenv_scripts: [relative.sh]\n")
	code, _, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--site", p, "--dry-run")
	assert.Equal(t, code, 2, errs)
	for _, want := range []string{p + `: line 3: field mpi.bind_to: "everywhere" is not a binding`, p + `: line 4: field env_scripts: "relative.sh": want an absolute path`} {
		assert.Assert(t, strings.Contains(errs, want), "want %q in\n%s", want, errs)
	}
	code, _, errs = cli(t, "--sku", "h200", "--suite", "singlenode", "--site", filepath.Join(t.TempDir(), "none.yaml"), "--dry-run")
	assert.Equal(t, code, 2, errs)
	assert.Assert(t, strings.Contains(errs, "read site file: open "), errs)
	// A plugin scope with a typo was ignored as another suite's: refused
	// like --param ncl:bindir=, naming its line; a test scope of a known
	// plugin another suite runs is a site's to give.
	typo := writeFile(t, "typo.yaml", "site: x\nparams:\n  ncl: {bindir: /x}\n  rccl.all_reduce: {bindir: /y}\n")
	code, _, errs = cli(t, "--sku", "h200", "--suite", "singlenode", "--site", typo, "--dry-run")
	assert.Equal(t, code, 2, errs)
	assert.Assert(t, strings.Contains(errs, typo+`: line 2: field params: scope "ncl" names no plugin (known: `), errs)
	assert.Assert(t, !strings.Contains(errs, `"rccl.all_reduce"`), errs)
}

// HCOLL's collectives are off under every launcher that starts Open MPI's
// mpirun (before, only ssh turned them off), and a site's hcoll: true
// leaves them on under every one of them.
func TestHCOLLEveryLauncher(t *testing.T) {
	on := writeFile(t, "hcoll.yaml", "site: x\nmpi: {hcoll: true, bind_to: core}\n")
	for _, l := range [][]string{
		{"--launcher", "local"},
		{"--launcher", "ssh", "--hosts", "node1"},
		{"--launcher", "slurm", "--slurm-mpi", "mpirun", "--partition", "gpu"},
		{"--launcher", "k8s", "--baselines", k8sSKU(t)},
	} {
		t.Run(l[1], func(t *testing.T) {
			args := append([]string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--test", "nccl.all_reduce", "--param", "mode=mpi", "--dry-run"}, l...)
			code, out, errs := cli(t, args...)
			assert.Equal(t, code, 0, errs)
			assert.Assert(t, strings.Contains(out, "-mca coll_hcoll_enable 0"), out)
			code, out, errs = cli(t, append(args, "--site", on)...)
			assert.Equal(t, code, 0, errs)
			assert.Assert(t, !strings.Contains(out, "coll_hcoll_enable"), out)
			assert.Assert(t, strings.Contains(out, "--bind-to core"), out)
		})
	}
}

// The site's mpi.flavor starts the ranks when --mpi-flavor is not given;
// the flag wins when it is; a flavor that is none is named by the site's
// field.
func TestSiteMPIFlavor(t *testing.T) {
	base := []string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--test", "nccl.all_reduce", "--param", "mode=mpi", "--dry-run",
		"--launcher", "ssh", "--hosts", "node1"}
	mpich := writeFile(t, "mpich.yaml", "site: x\nmpi: {flavor: mpich}\n")
	code, out, errs := cli(t, append(base, "--site", mpich)...)
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "mpiexec -n 2 -ppn 2"), out)
	code, out, errs = cli(t, append(base, "--site", mpich, "--mpi-flavor", "openmpi")...)
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "mpirun ") && !strings.Contains(out, "mpiexec"), out)
	bad := writeFile(t, "lam.yaml", "site: x\nmpi: {flavor: lam}\n")
	code, _, errs = cli(t, append(base, "--site", bad)...)
	assert.Equal(t, code, 2, errs)
	assert.Assert(t, strings.Contains(errs, bad+`: field mpi.flavor: --mpi-flavor: unknown MPI flavor "lam"`), errs)
	// MPICH has no MCA parameters: a site asking for them says so.
	mca := writeFile(t, "mca.yaml", "site: x\nmpi: {flavor: mpich, mca: {btl: self}}\n")
	code, _, errs = cli(t, append(base, "--site", mca)...)
	assert.Equal(t, code, 2, errs)
	assert.Assert(t, strings.Contains(errs, mca+": field mpi.mca: btl is an Open MPI MCA parameter, and the ranks start with mpich, which has none"), errs)
}

// A site's parameters lie over the suite's, a --param of the same key wins,
// and a scope the suite does not run is ignored (a site serves every suite).
func TestSiteParams(t *testing.T) {
	p := writeFile(t, "p.yaml", "site: x\nparams:\n  nccl: {bindir: /site/build, json: \"false\"}\n  ibperf: {bindir: /other}\n")
	base := []string{"--sku", "h200", "--suite", "singlenode", "--test", "nccl.all_reduce", "--gpus-per-node", "2", "--dry-run", "--site", p}
	code, out, errs := cli(t, base...)
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "/site/build/all_reduce_perf -b 8 -e 4G -f 2 -g 2 -c 1\n"), out)
	code, out, errs = cli(t, append(base, "--param", "bindir=/flag/build")...)
	assert.Equal(t, code, 0, errs)
	assert.Assert(t, strings.Contains(out, "/flag/build/all_reduce_perf"), out)
}

// No image is built in: a k8s run of a SKU without one says where to give
// it. a100-ndmv4 names none since its seed's was private, mi355x none
// since its seed's is an individual's Docker Hub repository (seed 004's
// site file, examples/sites/mi355x-k8s.yaml, gives it).
func TestK8sImageRequired(t *testing.T) {
	for _, c := range []struct{ sku, site, siteImage string }{
		{"a100-ndmv4", "", ""},
		{"mi355x", "../../examples/sites/mi355x-k8s.yaml", "prasadnairamd/rocm-multinode:7.2.2-complete"},
	} {
		t.Run(c.sku, func(t *testing.T) {
			code, _, errs := cli(t, "--sku", c.sku, "--suite", "multinode", "--launcher", "k8s", "--dry-run")
			assert.Equal(t, code, 2, errs)
			assert.Assert(t, strings.Contains(errs, "launcher k8s needs a container image holding the benchmarks, mpirun and sshd, and none is given: give --image, or a site file (--site) with kubernetes.image, or kubernetes.image in baselines/"+c.sku+".yaml"), errs)
			code, out, errs := cli(t, "--sku", c.sku, "--suite", "multinode", "--launcher", "k8s", "--image", "registry.example/nccl:1", "--dry-run")
			assert.Equal(t, code, 0, errs)
			assert.Assert(t, strings.Contains(out, "image: registry.example/nccl:1"), out)
			if c.site != "" {
				code, out, errs := cli(t, "--sku", c.sku, "--suite", "multinode", "--launcher", "k8s", "--site", c.site, "--dry-run")
				assert.Equal(t, code, 0, errs)
				assert.Assert(t, strings.Contains(out, "image: "+c.siteImage), out)
			}
		})
	}
}

// The MPIJob launcher pod holds no rank: it gets none of the rank pods'
// SR-IOV attachments, VFs, GPUs or GPU node selector, only the site's
// kubernetes.launcher shape (seed 000's mpimaster: cpu 1).
func TestMPIJobLauncherPod(t *testing.T) {
	code, out, errs := cli(t, "--sku", "a100-ndmv4", "--suite", "multinode", "--launcher", "k8s", "--k8s-flavor", "mpijob",
		"--site", "../../examples/sites/seed000-aks-volcano.yaml", "--dry-run")
	assert.Equal(t, code, 0, errs)
	objs := manifests(t, out)
	mj := kind(t, objs, "kubeflow.org/v2beta1", "MPIJob")
	launcher := dig(mj, "spec", "mpiReplicaSpecs", "Launcher", "template")
	worker := dig(mj, "spec", "mpiReplicaSpecs", "Worker", "template")
	assert.Equal(t, dig(launcher, "metadata", "annotations"), nil)
	assert.Equal(t, dig(launcher, "spec", "nodeSelector"), nil)
	assert.DeepEqual(t, dig(launcher, "spec", "containers", 0, "resources"), map[string]any{"limits": map[string]any{"cpu": "1"}, "requests": map[string]any{"cpu": "1"}})
	assert.Equal(t, str(dig(worker, "metadata", "annotations", "k8s.v1.cni.cncf.io/networks")), strings.TrimSuffix(strings.Repeat("hostdev-net,", 8), ","))
	assert.Equal(t, str(dig(worker, "spec", "nodeSelector", "kubernetes.azure.com/accelerator")), "nvidia")
	assert.Equal(t, str(dig(worker, "spec", "containers", 0, "resources", "limits", "nvidia.com/mlnxnics")), "8")
}

// The README's headline command and the example batch script's default
// judge numbers on the hardware they name: every test of the suite has a
// baseline at the scope they run (h200 has 1 x 2 only; its default 8 GPUs
// and its multinode suite judge no number yet).
func TestExamplesHaveABaseline(t *testing.T) {
	readme := readFile(t, "../../README.md")
	m := regexp.MustCompile("(?s)```\n(gpuaccept --sku h200 --suite singlenode --launcher local[^`]*)```").FindStringSubmatch(readme)
	assert.Assert(t, m != nil, "no headline command in README.md")
	headline := shellWords(strings.ReplaceAll(m[1], "\\\n", " "))

	fake := filepath.Join(t.TempDir(), "gpuaccept")
	assert.NilError(t, os.WriteFile(fake, []byte("#!/bin/sh\nfor a; do echo \"$a\"; done\n"), 0o755))
	cmd := exec.Command("bash", "../../examples/slurm/gpuaccept.sbatch")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GPUACCEPT=" + fake, "SLURM_JOB_ID=1", "SLURM_JOB_NODELIST=n1", "SLURM_JOB_NUM_NODES=1"}
	out, err := cmd.Output()
	assert.NilError(t, err)
	sbatch := strings.Split(strings.TrimSpace(string(out)), "\n")[1:] // after the script's own line
	assert.Assert(t, strings.Contains(readFile(t, "../../examples/slurm/gpuaccept.sbatch"), "#SBATCH --nodes=1\n"))

	var c cliopts.Common
	cat, err := c.Catalog(io.Discard)
	assert.NilError(t, err)
	for name, args := range map[string][]string{"README headline": headline, "gpuaccept.sbatch": sbatch} {
		s, err := cat.Get(after(args, "--sku"))
		assert.NilError(t, err, name)
		su := s.Suites[after(args, "--suite")]
		assert.Assert(t, su != nil, "%s: %v", name, args)
		gpus, err := strconv.Atoi(after(args, "--gpus-per-node"))
		assert.NilError(t, err, "%s names no --gpus-per-node: %v", name, args)
		nodes := su.Nodes
		if n := after(args, "--nodes"); n != "" {
			nodes, _ = strconv.Atoi(n)
		}
		for _, st := range su.Tests {
			if st.Skip == "" {
				assert.Assert(t, len(s.Entries(st.Test, plan.Scope{Nodes: nodes, GPUsPerNode: gpus})) > 0,
					"%s: %s has no baseline at %dx%d (it has %v)", name, st.Test, nodes, gpus, s.Scopes(st.Test))
			}
		}
	}
}

// A run keeps where its SKU came from, in results.json and in the
// journal's first line: built-in, or the site's file that replaced it
// (--baselines), which is also the file kept in baseline/.
func TestRunKeepsSKUSource(t *testing.T) {
	dir := t.TempDir()
	const mark = "# the site's copy\n"
	site := filepath.Join(dir, "h200.yaml")
	assert.NilError(t, os.WriteFile(site, []byte(mark+readFile(t, "../../baselines/h200.yaml")), 0o644))
	for _, c := range []struct {
		name, source string
		args         []string
		note         bool
	}{
		{"built-in", "built-in", nil, false},
		{"site", site, []string{"--baselines", dir}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "results")
			args := append([]string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--launcher", "replay",
				"--replay-dir", "../../testdata/recordings/h200x2-2026-11-30-final/single", "--out", out}, c.args...)
			code, stdout, errs := cli(t, args...)
			assert.Equal(t, code, 0, stdout+errs)
			assert.Equal(t, strings.Count(errs, "note: SKU h200 from "+site+" overrides the built-in one\n"), map[bool]int{true: 1, false: 0}[c.note], errs)
			var res struct {
				SKUSource string `json:"sku_source"`
			}
			assert.NilError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, layout.Results))), &res))
			assert.Equal(t, res.SKUSource, c.source)
			var head struct {
				Run struct {
					SKUSource string `json:"sku_source"`
				} `json:"run"`
			}
			first, _, _ := strings.Cut(readFile(t, filepath.Join(out, layout.Journal)), "\n")
			assert.NilError(t, json.Unmarshal([]byte(first), &head))
			assert.Equal(t, head.Run.SKUSource, c.source)
			assert.Equal(t, strings.HasPrefix(readFile(t, filepath.Join(out, "baseline", "h200.yaml")), mark), c.note)
		})
	}
}

// A site's own SKU file that judges a run (--baselines) is named in every
// report, not only in results.json (issue 30's attacker trial: a site file
// with its floors at 0.0001 made the busy H100 pass, and no report a
// customer reads said a site file judged it); and a folder that claims the
// built-in file judged it, when its kept copy is not the built-in file, is
// a finding of verify.
func TestSiteSKUFileNamedInReports(t *testing.T) {
	site := h100Without1x1(t, func(b []byte) []byte {
		return regexp.MustCompile(`floor: 0\.[0-9]+`).ReplaceAll(b, []byte("floor: 0.05"))
	})
	out := filepath.Join(t.TempDir(), "busy")
	code, stdout, errs := cli(t, "--sku", "h100", "--baselines", site, "--suite", "node", "--launcher", "replay", "--gpus-per-node", "1",
		"--replay-dir", "../../testdata/recordings/h100x1-2026-12-07/issue28/busy/raw", "--out", out)
	assert.Equal(t, code, exitOK, "the site's floors pass the busy GPU: %s", stdout+errs)
	line := "SKU h100 was read from the site's file " + filepath.Join(site, "h100.yaml") + ", not from the files gpuaccept carries"
	assert.Assert(t, strings.Contains(stdout, "note: "+line), stdout)
	assert.Assert(t, strings.Contains(readFile(t, filepath.Join(out, "table.txt")), "note: "+line))
	assert.Assert(t, strings.Contains(readFile(t, filepath.Join(out, "summary.md")), "> note: "+line))
	assert.Assert(t, strings.Contains(readFile(t, filepath.Join(out, "report.html")), "<dt>SKU file</dt>"))
	assert.Assert(t, strings.Contains(readFile(t, filepath.Join(out, "junit.xml")), `<property name="sku_source" value="`+filepath.Join(site, "h100.yaml")+`">`))
	code, stdout, errs = cli(t, "verify", out)
	assert.Equal(t, code, 0, stdout+errs)
	assert.Assert(t, strings.Contains(stdout, "NOTE baseline/h100.yaml is not this gpuaccept's (dev) built-in h100 baseline"), stdout)

	forged := copyDir(t, out)
	forgeJournal(t, forged, regexp.QuoteMeta(`"sku_source":"`+filepath.Join(site, "h100.yaml")+`"`), `"sku_source":"built-in"`)
	assert.Assert(t, !strings.Contains(readFile(t, filepath.Join(forged, "table.txt")), "site's file"))
	code, stdout, errs = cli(t, "verify", forged)
	assert.Equal(t, code, 1, stdout+errs)
	assert.Assert(t, strings.Contains(stdout, "MISMATCH results.json says SKU h100 is the built-in file (sku_source), but baseline/h100.yaml is not this gpuaccept's (dev) built-in one"), stdout)
}

// A site copy of a built-in SKU whose basis lines were deleted would show
// the built-in file's cited numbers as the site's own recording (golden):
// verify names each such entry (attacker trial of issue 30, F3).
func TestSiteCopyOfReferencesIsNotGolden(t *testing.T) {
	data := strings.ReplaceAll(readFile(t, "../../baselines/h100.yaml"), "    basis: reference\n", "")
	site := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(site, "h100.yaml"), []byte(data), 0o644))
	out := filepath.Join(t.TempDir(), "idle")
	code, stdout, errs := cli(t, "--sku", "h100", "--baselines", site, "--suite", "node", "--launcher", "replay", "--gpus-per-node", "1",
		"--replay-dir", "../../testdata/recordings/h100x1-2026-12-07/issue28/node-1/raw", "--out", out)
	assert.Equal(t, code, exitOK, stdout+errs)
	code, stdout, errs = cli(t, "verify", out)
	assert.Equal(t, code, 1, stdout+errs)
	n := strings.Count(stdout, "is the built-in file's reference entry (a cited measurement of other hardware), marked golden")
	assert.Equal(t, n, strings.Count(readFile(t, "../../baselines/h100.yaml"), "    basis: reference\n"), stdout)
	assert.Assert(t, strings.Contains(stdout, "MISMATCH baseline/h100.yaml line "), stdout)
}

// h100Without1x1 writes the built-in h100 SKU file, edited by edit and
// without its 1x1 entries (a site's copy before its own recording: the
// datasheet floors judge the node suite on one GPU), into a fresh folder
// (--baselines DIR) and returns the folder.
func h100Without1x1(t *testing.T, edit func([]byte) []byte) string {
	t.Helper()
	head, body, ok := strings.Cut(readFile(t, "../../baselines/h100.yaml"), "\nbaselines:\n")
	assert.Assert(t, ok)
	entries := strings.Split(body, "\n  - test: ")
	kept := []string{entries[0]}
	dropped := 0
	for _, e := range entries[1:] {
		if strings.Contains(e, "scope: {nodes: 1, gpus_per_node: 1}") {
			dropped++
			continue
		}
		kept = append(kept, e)
	}
	assert.Assert(t, dropped > 0, "h100 has no 1x1 entry to leave out")
	data := head + "\nbaselines:\n" + strings.Join(kept, "\n  - test: ")
	if edit != nil {
		data = string(edit([]byte(data)))
	}
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "h100.yaml"), []byte(data), 0o644))
	return dir
}

// A site's SKU under a name of its own (no built-in of that name) that
// passes the busy H100 is still compared with the built-in SKU the raw
// outputs' GPU picks: verify says what h100 would have judged (attacker
// trial of issue 30, F2).
func TestSiteSKUOfItsOwnNameComparedWithBuiltin(t *testing.T) {
	dir := h100Without1x1(t, func(b []byte) []byte {
		b = regexp.MustCompile(`floor: 0\.[0-9]+`).ReplaceAll(b, []byte("floor: 0.05"))
		return regexp.MustCompile(`(?m)^sku: h100$`).ReplaceAll(b, []byte("sku: lab-h100"))
	})
	assert.NilError(t, os.Rename(filepath.Join(dir, "h100.yaml"), filepath.Join(dir, "lab-h100.yaml")))
	out := filepath.Join(t.TempDir(), "busy")
	code, stdout, errs := cli(t, "--sku", "lab-h100", "--baselines", dir, "--suite", "node", "--launcher", "replay", "--gpus-per-node", "1",
		"--replay-dir", "../../testdata/recordings/h100x1-2026-12-07/issue28/busy/raw", "--out", out)
	assert.Equal(t, code, exitOK, stdout+errs)
	code, stdout, errs = cli(t, "verify", out)
	assert.Equal(t, code, 0, stdout+errs)
	for _, want := range []string{
		"NOTE baseline/lab-h100.yaml: this gpuaccept (dev) has no built-in SKU lab-h100",
		"NOTE the raw outputs' GPU is built-in SKU h100's: the verdicts against it follow",
		"NOTE against the built-in h100 baseline: gemm.matmul: fail, not pass",
	} {
		assert.Assert(t, strings.Contains(stdout, want), "want %q in\n%s", want, stdout)
	}
}

// A results folder replayed at another scope than it ran at is an ERROR
// naming both, never a FAIL (new-user trial of issue 30: the 1-GPU H100
// folder replayed with --sku h100 and no --gpus-per-node asked for 8 GPUs,
// and health.node failed a GPU count the hardware never had, "RMA the
// GPU"); at its own scope, or with --sku auto, it is judged.
func TestReplayAtAnotherScopeIsAnError(t *testing.T) {
	const dir = "../../testdata/recordings/h100x1-2026-12-07/issue28/node-1"
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"the SKU's 8 GPUs", []string{"--sku", "h100"}, exitError, "ERROR: SKU h100, suite node, scope 1x8, launcher replay: 9 error"},
		{"its own scope", []string{"--sku", "h100", "--gpus-per-node", "1"}, exitOK, "PASS: SKU h100, suite node, scope 1x1"},
		{"--sku auto", []string{"--sku", "auto"}, exitOK, "PASS: SKU h100, suite node, scope 1x1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r")
			code, stdout, errs := cli(t, append(c.args, "--suite", "node", "--launcher", "replay", "--replay-dir", dir, "--out", out)...)
			assert.Equal(t, code, c.code, stdout+errs)
			assert.Assert(t, strings.Contains(stdout, c.want), stdout)
			if c.code == exitError {
				res := readFile(t, filepath.Join(out, "results.json"))
				assert.Assert(t, strings.Contains(res, "ran at scope 1x1 (nodes x GPUs per node), this run asks 1x8: replay them at their own (--nodes 1 --gpus-per-node 1, or --sku auto)"), res)
			}
			assert.Assert(t, !strings.Contains(stdout, "GA-GPU-COUNT"), stdout)
		})
	}
}
