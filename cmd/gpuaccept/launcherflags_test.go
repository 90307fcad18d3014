package main

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// launcherFlags are every launcher's own flags, one value each that its
// flag parses: what the tests below give with another launcher. The
// help's groups must list the same names (TestLauncherFlagsAllOwned).
var launcherFlags = map[string][]string{
	"local":  nil,
	"replay": {"--replay-dir=" + healthy},
	"ssh": {"--ssh-port=2222", "--ssh-key=/nonexistent/id", "--ssh-user=u", "--ssh-known-hosts=/nonexistent/kh",
		"--ssh-insecure", "--ssh-connect-timeout=5s"},
	"slurm": {"--partition=gpu", "--account=a", "--qos=q", "--reservation=r", "--time=30m", "--sbatch-arg=--constraint=ib",
		"--container-image=img", "--container-mounts=/a:/a", "--slurm-mpi=mpirun", "--slurm-mode=submit", "--slurm-gpus=gres",
		"--slurm-exclusive=false", "--slurm-poll=1s", "--slurm-pending-timeout=1m"},
	"k8s": {"--kubeconfig=/nonexistent/kc", "--context=c", "--namespace=acc", "--image=img", "--k8s-flavor=jobset",
		"--k8s-queue=q", "--k8s-pending-timeout=1m", "--queue=q"},
}

// flagName is --name of --name=value.
func flagName(arg string) string {
	name, _, _ := strings.Cut(arg, "=")
	return name
}

// Every launcher's flag, given with another launcher, stops run, health
// and localise before anything (exit 2) with an error naming the flag and
// the launcher that owns it: --partition with the local launcher is no
// longer silently ignored.
func TestLauncherFlagsOfAnotherLauncher(t *testing.T) {
	for _, owner := range slices.Sorted(maps.Keys(launcherFlags)) {
		for _, arg := range launcherFlags[owner] {
			for _, l := range slices.Sorted(maps.Keys(launcherFlags)) {
				if l == owner {
					continue
				}
				t.Run(l+" "+arg, func(t *testing.T) {
					code, out, errs := cli(t, "--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--dry-run", "--launcher", l, arg)
					assert.Equal(t, code, 2, errs)
					assert.Equal(t, out, "", "nothing planned")
					assert.Assert(t, strings.Contains(errs, flagName(arg)+" is a flag of launcher "+owner+"; this run's launcher is "+l+" (--launcher)"), errs)
				})
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		// The command line: both foreign flags named, in the
		// order given.
		{[]string{"--sku", "h200", "--suite", "node", "--launcher", "local", "--partition", "gpu", "--namespace", "foo", "--dry-run"},
			"--partition is a flag of launcher slurm, --namespace is a flag of launcher k8s; this run's launcher is local (--launcher)"},
		// The default launcher is local.
		{[]string{"--sku", "h200", "--suite", "singlenode", "--dry-run", "--ssh-key", "k"}, "--ssh-key is a flag of launcher ssh; this run's launcher is local"},
		{[]string{"health", "--sku", "h200", "--launcher", "ssh", "--hosts", "n1", "--partition", "gpu"}, "--partition is a flag of launcher slurm; this run's launcher is ssh"},
		{[]string{"health", "--sku", "h200", "--slurm-check", "--image", "i"}, "--image is a flag of launcher k8s; this run's launcher is local"},
		// health marks Kubernetes nodes through --kubeconfig and
		// --context only with --taint-on-fail or --label.
		{[]string{"health", "--sku", "h200", "--kubeconfig", "/nonexistent/kc"}, "--kubeconfig is a flag of launcher k8s; this run's launcher is local"},
		{[]string{"health", "--sku", "h200", "--context", "c", "--launcher", "ssh", "--hosts", "n1"}, "--context is a flag of launcher k8s; this run's launcher is ssh"},
		{[]string{"health", "--sku", "h200", "--taint-on-fail", "--kubeconfig", "/nonexistent/kc", "--namespace", "acc"}, "--namespace is a flag of launcher k8s; this run's launcher is local"},
		{[]string{"localise", "--sku", "h200", "--suite", "multinode", "--hosts", "n1,n2", "--launcher", "slurm", "--dry-run", "--namespace", "acc"},
			"--namespace is a flag of launcher k8s; this run's launcher is slurm"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, _, errs := cli(t, c.args...)
			assert.Equal(t, code, 2, errs)
			assert.Assert(t, strings.Contains(errs, c.want), errs)
		})
	}
}

// health's --taint-on-fail and --label read --kubeconfig and --context
// with any launcher: the run goes on past the launcher flags (here to the
// local launcher's refusal of two nodes).
func TestLauncherFlagsHealthMarksNodes(t *testing.T) {
	for _, mark := range []string{"--taint-on-fail", "--label"} {
		code, _, errs := cli(t, "health", "--sku", "h200", "--suite", "node", "--nodes", "2", mark, "--kubeconfig", "/nonexistent/kc", "--context", "c")
		assert.Equal(t, code, 2, errs)
		assert.Assert(t, !strings.Contains(errs, "is a flag of launcher"), errs)
		assert.Assert(t, strings.Contains(errs, "launcher local runs on this host only"), errs)
	}
}

// A launcher's own flags go with it: a dry run of each launcher with
// flags of its own plans its commands (exit 0), --queue (the old name of
// --k8s-queue) included, and the values reach what it prints.
func TestLauncherFlagsOwnDryRun(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string // in the commands printed
		note string   // on stderr
	}{
		{name: "local", args: []string{"--launcher", "local"}, want: []string{"all_reduce_perf"}},
		{name: "replay", args: []string{"--launcher", "replay", "--replay-dir", healthy}, want: []string{"replay nccl.all_reduce/all_reduce.log from " + healthy}},
		{name: "ssh", args: []string{"--launcher", "ssh", "--hosts", "gpu-node-1", "--ssh-port", "2222", "--ssh-user", "acc", "--ssh-connect-timeout", "5s"},
			want: []string{"ConnectTimeout=5 -p 2222 -l acc"}},
		{name: "slurm", args: []string{"--launcher", "slurm", "--partition", "gpu", "--account", "acct", "--time", "30m", "--slurm-mpi", "mpirun", "--slurm-mode", "submit", "--slurm-gpus", "gres"},
			want: []string{"#SBATCH --partition=gpu", "#SBATCH --account=acct", "#SBATCH --gres=gpu:2"}},
		{name: "k8s", args: []string{"--launcher", "k8s", "--image", "reg/img:1", "--namespace", "acc", "--k8s-queue", "gpu-q", "--k8s-flavor", "job"},
			want: []string{"namespace: acc", "image: reg/img:1", "kueue.x-k8s.io/queue-name: gpu-q"}},
		{name: "k8s old --queue", args: []string{"--launcher", "k8s", "--image", "reg/img:1", "--queue", "old-q"},
			want: []string{"kueue.x-k8s.io/queue-name: old-q"}, note: "Flag --queue has been deprecated, use --k8s-queue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--sku", "h200", "--suite", "singlenode", "--test", "nccl.all_reduce", "--gpus-per-node", "2", "--dry-run"}, c.args...)
			code, out, errs := cli(t, args...)
			assert.Equal(t, code, 0, errs)
			for _, w := range c.want {
				assert.Assert(t, strings.Contains(out, w), "want %q in\n%s", w, out)
			}
			assert.Assert(t, strings.Contains(errs, c.note), errs)
		})
	}
}

// The table above covers every launcher flag the help lists, and only
// those: a flag added to a launcher is tested with the others too.
func TestLauncherFlagsAllOwned(t *testing.T) {
	code, _, errs := cli(t, "run", "--help")
	assert.Equal(t, code, 0)
	_, groups, ok := strings.Cut(errs, "\nLauncher flags (each accepted only with its --launcher):\n")
	assert.Assert(t, ok, errs)
	got := map[string][]string{}
	group := regexp.MustCompile(`^  --launcher (\S+):`)
	flag := regexp.MustCompile(`^      (--[a-z0-9-]+)`)
	var cur string
	for _, line := range strings.Split(groups, "\n") {
		if m := group.FindStringSubmatch(line); m != nil {
			cur = m[1]
			got[cur] = nil
		} else if m := flag.FindStringSubmatch(line); m != nil {
			got[cur] = append(got[cur], strings.TrimSuffix(m[1], ":"))
		}
	}
	want := map[string][]string{}
	for l, args := range launcherFlags {
		want[l] = nil
		for _, a := range args {
			want[l] = append(want[l], flagName(a))
		}
	}
	assert.DeepEqual(t, got, want)
}
