package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuaccept/gpuaccept/framework/drain"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/internal/fakehealth"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// fakeHealthEnv makes this test binary serve the fake preflight plugin
// when the plugin host re-executes it: the child registers it in init.
const fakeHealthEnv = "GPUACCEPT_TEST_FAKEHEALTH"

func init() {
	if os.Getenv(fakeHealthEnv) != "" {
		pluginapi.Register(fakehealth.PluginName, fakehealth.Plugin{})
	}
}

// withFakeHealth serves fakehealth for one test, here and in the plugin
// processes it starts, and returns a --baselines folder whose h200 SKU
// has a suite "checked": the all_reduce, then the fake health test.
func withFakeHealth(t *testing.T) string {
	t.Helper()
	t.Setenv(fakeHealthEnv, "1")
	if _, ok := pluginapi.Builtin(fakehealth.PluginName); !ok {
		pluginapi.Register(fakehealth.PluginName, fakehealth.Plugin{})
		t.Cleanup(func() { pluginapi.Unregister(fakehealth.PluginName) })
	}
	data, err := os.ReadFile("../../baselines/h200.yaml")
	assert.NilError(t, err)
	suite := "\nsuites:\n  checked:\n    description: the health check, then all_reduce\n    nodes: 1\n    tests:\n      - test: nccl.all_reduce\n      - test: fakehealth.node\n"
	data = []byte(strings.Replace(string(data), "\nsuites:\n", suite, 1))
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "h200.yaml"), data, 0o644))
	return dir
}

// --slurm-check runs the preflight test on this node with the local
// launcher, prints one line and exits 1 when the node failed, 0 when it
// passed, leaving no results folder behind unless --out asks for one.
func TestHealthSlurmCheck(t *testing.T) {
	skus := withFakeHealth(t)
	host, err := os.Hostname()
	assert.NilError(t, err)
	cases := []struct {
		name, report string
		code         int
		line         string
	}{
		{"failed", "local=GA-TEST-ECC:uncorrected_ECC_errors_on_GPU_0", 1, "gpuaccept health: FAIL " + host + " GA-TEST-ECC: uncorrected_ECC_errors_on_GPU_0\n"},
		{"passed", "local=ok", 0, "gpuaccept health: OK\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// TMPDIR stays: the process keeps state of its own there.
			before, _ := filepath.Glob(filepath.Join(os.TempDir(), "gpuaccept-health-*"))
			t.Chdir(t.TempDir())
			code, out, errs := cli(t, "health", "--sku", "h200", "--baselines", skus, "--suite", "checked", "--gpus-per-node", "2", "--slurm-check",
				"--param", "fakehealth:report="+c.report)
			assert.Equal(t, code, c.code, errs)
			assert.Equal(t, out, c.line)
			after, _ := filepath.Glob(filepath.Join(os.TempDir(), "gpuaccept-health-*"))
			assert.DeepEqual(t, after, before)
			_, err := os.Stat("gpuaccept-results")
			assert.Assert(t, os.IsNotExist(err), "a results folder was written: %v", err)
		})
	}
	t.Run("usage", func(t *testing.T) {
		code, _, errs := cli(t, "health", "--sku", "h200", "--baselines", skus, "--suite", "checked", "--slurm-check", "--hosts", "a,b")
		assert.Equal(t, code, 2)
		assert.Assert(t, strings.Contains(errs, "--hosts does not go with it"), errs)
	})
}

// gpuaccept health runs only the suite's preflight tests and writes a
// results folder that verify accepts, the benchmark left out as a --test
// choice would.
func TestHealthWritesAFolder(t *testing.T) {
	skus := withFakeHealth(t)
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, errs := cli(t, "health", "--sku", "h200", "--baselines", skus, "--suite", "checked", "--gpus-per-node", "2", "--out", out,
		"--param", "fakehealth:report=local=GA-TEST-XID:XID_79_on_GPU_1")
	assert.Equal(t, code, 1, errs)
	assert.Assert(t, strings.Contains(stdout, "fakehealth.node"), stdout)
	assert.Assert(t, !strings.Contains(stdout, "nccl.all_reduce"), "the benchmark ran:\n%s", stdout)
	assert.Assert(t, strings.Contains(stdout, "1 bad node: "), stdout)
	// The folder verifies against its kept copy, but a site's suite
	// under the built-in SKU's name is no sign-off the built-in SKU rules
	// re-derive. The --param made the fake node's output, not its
	// verdict: a note.
	code, vout, verrs := cli(t, "verify", out)
	assert.Equal(t, code, 1, "%s\n%s", vout, verrs)
	for _, w := range []string{
		`MISMATCH suite "checked" is not a suite of this gpuaccept's built-in h200 baseline`,
		"NOTE fakehealth.node ran with parameters suite checked does not give: report=local=GA-TEST-XID:XID_79_on_GPU_1 (--param): judged again with the suite's own, the raw outputs give the same verdict",
	} {
		assert.Assert(t, strings.Contains(vout, w), "want %q in\n%s", w, vout)
	}
	assert.Assert(t, !strings.Contains(vout, "REJUDGED"), vout)
}

// --taint-on-fail and --label mark the nodes the health check named on
// the testenv's kube-apiserver: the failed one tainted and labelled
// failed, the passing one labelled passed (framework/drain has the
// RBAC test and the details).
func TestHealthTaintsNodes(t *testing.T) {
	kc := testenv.Need(t, "GPUACCEPT_K8S_KUBECONFIG", "k8s")
	skus := withFakeHealth(t)
	c, err := drain.Dial(kc, "")
	assert.NilError(t, err)
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	good, bad := "ga-cli-good-"+hex.EncodeToString(b), "ga-cli-bad-"+hex.EncodeToString(b)
	for _, n := range []string{good, bad} {
		_, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{})
		assert.NilError(t, err)
		t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	code, _, errs := cli(t, "health", "--sku", "h200", "--baselines", skus, "--suite", "checked", "--gpus-per-node", "2", "--out", filepath.Join(t.TempDir(), "r"),
		"--param", "fakehealth:report="+good+"=ok,"+bad+"=GA-TEST-NVLINK:link_3_inactive", "--taint-on-fail", "--label", "--kubeconfig", kc)
	assert.Equal(t, code, 1, errs)
	assert.Assert(t, strings.Contains(errs, "tainted "+bad+" gpuaccept.io/health=failed:NoSchedule (GA-TEST-NVLINK)"), errs)
	n, err := c.CoreV1().Nodes().Get(ctx, bad, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, n.Labels[drain.LabelKey], drain.LabelFailed)
	assert.Equal(t, n.Annotations[drain.CodeAnnotation], "GA-TEST-NVLINK")
	tainted := false
	for _, tt := range n.Spec.Taints {
		tainted = tainted || (tt.Key == drain.TaintKey && tt.Effect == corev1.TaintEffectNoSchedule)
	}
	assert.Assert(t, tainted, "%+v", n.Spec.Taints)
	n, err = c.CoreV1().Nodes().Get(ctx, good, metav1.GetOptions{})
	assert.NilError(t, err)
	assert.Equal(t, n.Labels[drain.LabelKey], drain.LabelPassed)
	for _, tt := range n.Spec.Taints {
		assert.Assert(t, tt.Key != drain.TaintKey, "the passing node is tainted: %+v", n.Spec.Taints)
	}
}

// A scope the launcher cannot give is a usage error before anything runs:
// the local launcher has one node, the shipped h200's multinode suite
// needs 2. Exit 2 naming --nodes and --launcher, no results folder.
func TestHealthScopeTheLauncherCannotGive(t *testing.T) {
	for _, args := range [][]string{
		{"--suite", "multinode"},
		{"--suite", "node", "--nodes", "2"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Chdir(t.TempDir())
			code, out, errs := cli(t, append([]string{"health", "--sku", "h200"}, args...)...)
			assert.Equal(t, code, 2, out+errs)
			assert.Assert(t, strings.Contains(errs, "launcher local runs on this host only: give --nodes 1"), errs)
			assert.Assert(t, strings.Contains(errs, "another --launcher ("), errs)
			entries, err := os.ReadDir(".")
			assert.NilError(t, err)
			assert.Equal(t, len(entries), 0, "something was written: %v", entries)
		})
	}
}

// The Slurm command lines the README and examples/slurm/gpuaccept-healthcheck.sh
// document, run as written against the shipped h200 (two suites with
// preflight tests, so each must name its suite): no usage error, one line.
// On a host with no GPU tool (this test machine) the node fails
// GA-GPU-COUNT, naming it once.
func TestHealthDocumentedSlurmLines(t *testing.T) {
	script := readFile(t, "../../examples/slurm/gpuaccept-healthcheck.sh")
	m := regexp.MustCompile(`\$\(gpuaccept (health [^|)]*?)\s*2>&1`).FindStringSubmatch(script)
	assert.Assert(t, m != nil, "no gpuaccept health line in the script:\n%s", script)
	fromScript := m[1]
	for _, d := range regexp.MustCompile(`(?m)^(\w+)=\$\{GPUACCEPT_\w+:-([^}]*)\}$`).FindAllStringSubmatch(script, -1) {
		fromScript = strings.ReplaceAll(fromScript, `"$`+d[1]+`"`, d[2])
	}
	assert.Assert(t, !strings.Contains(fromScript, "$"), "a variable without its default: %s", fromScript)
	m = regexp.MustCompile(`(?m)gpuaccept-prolog\.sh: exec /usr/local/bin/gpuaccept (health .*)$`).FindStringSubmatch(readFile(t, "../../README.md"))
	assert.Assert(t, m != nil, "no prolog line in README.md")
	fromREADME := m[1]
	noTool := true
	for _, tool := range []string{"nvidia-smi", "amd-smi", "rocm-smi"} {
		if _, err := exec.LookPath(tool); err == nil {
			noTool = false
		}
	}
	line := regexp.MustCompile(`^gpuaccept health: (OK|FAIL \S+ \S+: .*|ERROR \S+: .*)\n$`)
	for name, cmdline := range map[string]string{"healthcheck.sh": fromScript, "README prolog": fromREADME} {
		t.Run(name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			code, out, errs := cli(t, strings.Fields(cmdline)...)
			assert.Assert(t, code != 2, "%s: usage error: %s", cmdline, errs)
			assert.Assert(t, line.MatchString(out), "%s: %q", cmdline, out)
			if !noTool {
				return
			}
			assert.Equal(t, code, 1, out+errs)
			f := regexp.MustCompile(`^gpuaccept health: FAIL (\S+) GA-GPU-COUNT: (.*)\n$`).FindStringSubmatch(out)
			assert.Assert(t, f != nil, out)
			assert.Equal(t, f[2], "no GPU tool (nvidia-smi, amd-smi, rocm-smi) found: 8 GPUs expected, none could be counted")
		})
	}
}

// health --help documents every exit code it sets, 3 and its ERROR line
// included, and a --slurm-check line that names its suite.
func TestHealthHelpExitCodes(t *testing.T) {
	code, out, errs := cli(t, "health", "--help")
	help := out + errs
	assert.Equal(t, code, 0, help)
	for _, want := range []string{"1 a node\nfailed", "2 usage", "3 a check could\nnot run", `"gpuaccept health: ERROR NODE: MESSAGE", exit
3`, "--suite node --slurm-check"} {
		assert.Assert(t, strings.Contains(help, want), "help lacks %q:\n%s", want, help)
	}
}

// health takes --site like run (issue 31, 2: it had lost it): the site's
// parameters of the suite's health check lie under it, and a --param of
// the same key wins.
func TestHealthSite(t *testing.T) {
	skus := withFakeHealth(t)
	host, err := os.Hostname() // what fakehealth's "local" reports as
	assert.NilError(t, err)
	st := writeFile(t, "site.yaml", "site: x\nparams:\n  fakehealth: {report: \"local=GA-TEST-XID:XID_79_on_GPU_1\"}\n")
	base := []string{"health", "--sku", "h200", "--baselines", skus, "--suite", "checked", "--gpus-per-node", "2", "--slurm-check", "--site", st}
	cases := []struct {
		name  string
		extra []string
		code  int
		line  string
	}{
		{"the site's parameter", nil, 1, "gpuaccept health: FAIL " + host + " GA-TEST-XID: XID_79_on_GPU_1"},
		{"a --param over it", []string{"--param", "report=local=ok"}, 0, "gpuaccept health: OK"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, errs := cli(t, append(base, c.extra...)...)
			assert.Equal(t, code, c.code, stdout+errs)
			assert.Equal(t, strings.TrimSpace(stdout), c.line, errs)
		})
	}
	bad := writeFile(t, "bad.yaml", "site: x\nmpi:\n  bind_to: everywhere\n")
	code, _, errs := cli(t, "health", "--sku", "h200", "--site", bad)
	assert.Equal(t, code, 2, errs)
	assert.Assert(t, strings.Contains(errs, bad+`: line 3: field mpi.bind_to: "everywhere" is not a binding`), errs)
}
