package site

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// Every example site file reads without a problem: they are what users copy.
func TestExamplesParse(t *testing.T) {
	files, err := filepath.Glob("../../examples/sites/*.yaml")
	assert.NilError(t, err)
	assert.Assert(t, len(files) >= 6, "%v", files)
	for _, f := range files {
		s, err := Load(f)
		assert.NilError(t, err, f)
		assert.Assert(t, s.Name != "" && s.Source != "", "%s: site and source name where it comes from", f)
	}
}

// A bad site file is refused with every problem's file, line and field, as
// SKU files are.
func TestProblemsNameFileLineField(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"misspelt key", "site: x\nenv_script: [/a.sh]\n", []string{`x.yaml: line 2: field "env_script" is not known here (known: description, env, env_scripts, kubernetes, mpi, params, shell, site, source)`}},
		{"misspelt kubernetes key", "site: x\nkubernetes:\n  image: a\n  launchr: {}\n", []string{`x.yaml: line 4: field "launchr" is not known here (known: annotations, compute_domain, env, gpu_resource, host_network, host_paths, image, ipc_lock, labels, launcher, node_selector, priority_class, privileged, queue, resources, service_account, shm_size, tolerations)`}},
		{"the SKU's rules on the pods' fields", "site: x\nkubernetes:\n  tolerations:\n    - {key: a, operator: Sometimes}\n", []string{`x.yaml: line 4: field kubernetes.tolerations.operator: "Sometimes" is not Equal or Exists`}},
		{"binding", "site: x\nmpi:\n  bind_to: everything\n", []string{`x.yaml: line 3: field mpi.bind_to: "everything" is not a binding`}},
		{"hcoll is its own field", "site: x\nmpi:\n  mca: {coll_hcoll_enable: \"1\"}\n", []string{"x.yaml: line 3: field mpi.mca: coll_hcoll_enable is mpi.hcoll's"}},
		{"relative script", "site: x\nenv_scripts: [set_env.sh]\n", []string{`x.yaml: line 2: field env_scripts: "set_env.sh": want an absolute path on the nodes`}},
		{"bad variable", "site: x\nenv: {NCCL-DEBUG: info}\n", []string{`x.yaml: line 2: field env: "NCCL-DEBUG" is not a variable name`}},
		{"unscoped parameter", "site: x\nparams:\n  bindir: /opt\n", []string{"x.yaml: line 3: cannot unmarshal"}},
		{"host path", "site: x\nkubernetes:\n  host_paths: [{path: bin, mount: /usr/local/gib}]\n", []string{`x.yaml: line 3: field kubernetes.host_paths: path "bin" and mount "/usr/local/gib" must both be absolute`}},
		{"wrong type", "site: x\nmpi: {args: --bind-to}\n", []string{"x.yaml: line 2: cannot unmarshal !!str `--bind-to` into []string"}},
		{"two problems at once", "site: x\nshell: bash\nenv_scripts: [a]\n", []string{"x.yaml: line 2: field shell", "x.yaml: line 3: field env_scripts"}},
		{"syntax", "site: x\nenv: {A: b\n", []string{"x.yaml: line 2: yaml: "}},
		{"empty", "", []string{"x.yaml: empty file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.text), "x.yaml")
			assert.Assert(t, s == nil)
			assert.Assert(t, err != nil)
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(err.Error(), w), "want %q in\n%s", w, err)
			}
		})
	}
	_, err := Load(filepath.Join(t.TempDir(), "none.yaml"))
	assert.ErrorContains(t, err, "read site file: open ")
}

// The site's env lies under a step's own, and its scripts are sourced by
// the step's own program: a rank's argv becomes the shell that sources
// them and then execs the program, so a program name or argument is never
// shell text.
func TestStep(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "site.yaml")
	assert.NilError(t, os.WriteFile(p, []byte("site: x\nenv: {NCCL_DEBUG: info, NCCL_NET: IB}\nenv_scripts: [/opt/a b.sh]\n"), 0o644))
	s, err := Load(p)
	assert.NilError(t, err)
	st := s.Step(plan.Step{Name: "s", Argv: []string{"/bin/all_reduce_perf", "-b", "$(x)"}, Env: map[string]string{"NCCL_NET": "gIB"}})
	assert.DeepEqual(t, st.Env, map[string]string{"NCCL_DEBUG": "info", "NCCL_NET": "gIB"})
	assert.DeepEqual(t, st.Argv[:2], []string{"/bin/sh", "-c"})
	assert.Equal(t, st.Argv[2], `if [ -r '/opt/a b.sh' ]; then . '/opt/a b.sh'; else echo "gpuaccept: site script "'/opt/a b.sh'" is missing on $(hostname)" >&2; exit 127; fi; exec "$@"`)
	assert.DeepEqual(t, st.Argv[3:], []string{"gpuaccept-site", "/bin/all_reduce_perf", "-b", "$(x)"})
	var none *Site
	assert.DeepEqual(t, none.Step(plan.Step{Argv: []string{"a"}}), plan.Step{Argv: []string{"a"}})
	assert.DeepEqual(t, s.ParamsFor([]string{"nccl"}), map[string]string{})
}

// The wrapper works in a real shell: what a script exports reaches the
// program, arguments pass untouched, and a missing script stops the step
// with its name instead of running the benchmark without the settings.
func TestStepRunsInShell(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "set env.sh")
	assert.NilError(t, os.WriteFile(script, []byte("export NCCL_NET=gIB\n"), 0o644))
	s := &Site{EnvScripts: []string{script}}
	st := s.Step(plan.Step{Argv: []string{"/bin/sh", "-c", `echo "$NCCL_NET $1"`, "prog", "$(not run)"}})
	out, err := exec.Command(st.Argv[0], st.Argv[1:]...).CombinedOutput()
	assert.NilError(t, err, string(out))
	assert.Equal(t, string(out), "gIB $(not run)\n")
	s.EnvScripts = []string{filepath.Join(dir, "missing.sh")}
	st = s.Step(plan.Step{Argv: []string{"/bin/true"}})
	cmd := exec.Command(st.Argv[0], st.Argv[1:]...)
	out, err = cmd.CombinedOutput()
	assert.Assert(t, err != nil)
	assert.Equal(t, cmd.ProcessState.ExitCode(), 127)
	assert.Assert(t, strings.Contains(string(out), "gpuaccept: site script "+filepath.Join(dir, "missing.sh")+" is missing on "), string(out))
	// A missing script's path is not run by the message that names it
	// (it was pasted into "..." where $(...) expands).
	planted := filepath.Join(dir, "PWNED")
	s.EnvScripts = []string{filepath.Join(dir, "x $(touch "+planted+")")}
	st = s.Step(plan.Step{Argv: []string{"/bin/true"}})
	out, _ = exec.Command(st.Argv[0], st.Argv[1:]...).CombinedOutput()
	_, err = os.Stat(planted)
	assert.Assert(t, os.IsNotExist(err), "the path ran: %s", out)
	assert.Assert(t, strings.Contains(string(out), "$(touch "), string(out))
}

// LoadForRun puts the site's secret env, and only it, into this process's
// environment, where every masking of the run reads it; no --site is no
// site, and a bad file is Load's error.
func TestLoadForRun(t *testing.T) {
	s, err := LoadForRun("")
	assert.NilError(t, err)
	assert.Assert(t, s == nil)
	dir := t.TempDir()
	f := filepath.Join(dir, "site.yaml")
	assert.NilError(t, os.WriteFile(f, []byte("site: lab\nenv:\n  GA_LOADFORRUN_TOKEN: tok42\n  GA_LOADFORRUN_DEBUG: info\n"), 0o644))
	t.Setenv("GA_LOADFORRUN_TOKEN", "")
	t.Setenv("GA_LOADFORRUN_DEBUG", "")
	s, err = LoadForRun(f)
	assert.NilError(t, err)
	assert.Equal(t, s.Name, "lab")
	assert.Equal(t, os.Getenv("GA_LOADFORRUN_TOKEN"), "tok42")
	assert.Equal(t, os.Getenv("GA_LOADFORRUN_DEBUG"), "", "not secret: the ranks get it from the site, not this process")
	_, err = LoadForRun(filepath.Join(dir, "missing.yaml"))
	assert.ErrorContains(t, err, "read site file")
}
