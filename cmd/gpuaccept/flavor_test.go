package main

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// --mpi-flavor starts the MPI steps of every launcher that starts ranks,
// not only ssh's: before the rank starters became one registry, local,
// slurm and k8s took the flag and printed Open MPI's mpirun all the same.
func TestMpiFlavorEveryLauncher(t *testing.T) {
	k8s := k8sSKU(t)
	launchers := []struct {
		name string
		args []string
	}{
		{"local", []string{"--launcher", "local"}},
		{"ssh", []string{"--launcher", "ssh", "--hosts", "node1"}},
		{"slurm", []string{"--launcher", "slurm", "--slurm-mpi", "mpirun", "--partition", "gpu"}},
		{"k8s", []string{"--launcher", "k8s", "--baselines", k8s}},
	}
	flavors := []struct {
		flavor, want, not string
	}{
		{"mpich", "mpiexec -n 2 -ppn 2 ", "mpirun "},
		{"hpcx", "-mca coll_hcoll_enable 0", "mpiexec"},
	}
	for _, l := range launchers {
		for _, f := range flavors {
			t.Run(l.name+"/"+f.flavor, func(t *testing.T) {
				args := append([]string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--test", "nccl.all_reduce",
					"--param", "mode=mpi", "--dry-run", "--mpi-flavor", f.flavor}, l.args...)
				code, out, errs := cli(t, args...)
				assert.Equal(t, code, 0, errs)
				assert.Assert(t, strings.Contains(out, f.want), "want %q in\n%s", f.want, out)
				assert.Assert(t, !strings.Contains(out, f.not), "%q in\n%s", f.not, out)
			})
		}
		// A flavor that is none, or srun (the slurm launcher's own
		// choice, --slurm-mpi), stops the run before anything, naming
		// the flag.
		for _, bad := range []struct{ flavor, want string }{
			{"lam", `--mpi-flavor: unknown MPI flavor "lam" (known: hpcx, mpich, openmpi)`},
			{"srun", "--mpi-flavor srun: srun starts the ranks of a Slurm allocation"},
		} {
			args := append([]string{"--sku", "h200", "--suite", "singlenode", "--gpus-per-node", "2", "--dry-run", "--mpi-flavor", bad.flavor}, l.args...)
			code, _, errs := cli(t, args...)
			assert.Equal(t, code, 2, errs)
			assert.Assert(t, strings.Contains(errs, "launcher "+l.name+": "+bad.want), errs)
		}
	}
}

// Each launcher's own flags are bound to its Config and listed in the
// help under its launcher, --replay-dir (once the command's) included,
// after the command's own flags (--mpi-flavor, which every launcher
// takes); run, localise and health bind them all without a clash.
func TestLauncherFlagsInHelp(t *testing.T) {
	for _, cmd := range []string{"run", "localise", "health"} {
		code, _, errs := cli(t, cmd, "--help")
		assert.Equal(t, code, 0, errs)
		own, groups, ok := strings.Cut(errs, "\nLauncher flags (each accepted only with its --launcher):\n")
		assert.Assert(t, ok, "%s --help has no launcher groups:\n%s", cmd, errs)
		assert.Assert(t, strings.Contains(own, "--mpi-flavor"), own)
		assert.Assert(t, !strings.Contains(own, "--partition"), "a launcher flag in the command's own list:\n%s", own)
		last := -1
		for _, want := range []string{"  --launcher k8s:\n", "--kubeconfig string", "--launcher local: no flags of its own", "  --launcher replay:\n", "--replay-dir string   recordings",
			"  --launcher slurm:\n", "--partition string", "  --launcher ssh:\n", "--ssh-port int"} {
			i := strings.Index(groups, want)
			assert.Assert(t, i > last, "%s --help: want %q after the one before in\n%s", cmd, want, groups)
			last = i
		}
	}
}
