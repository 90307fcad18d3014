package rankstart

import (
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

func TestOpenMPI(t *testing.T) {
	s := plan.Step{Name: "all_reduce", Argv: []string{"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}, Procs: 16, ProcsPerNode: 8, MPI: true,
		Env: map[string]string{"NCCL_TOPO_FILE": "/workspace/ndv4-topo.xml"}}
	argv, err := Default().Argv(s, Options{Hosts: []string{"node1", "node2"}, AllowRoot: true, ExtraArgs: []string{"-mca", "coll_hcoll_enable", "0"},
		Environ: []string{"NCCL_DEBUG=INFO", "HOME=/root", "LD_LIBRARY_PATH=/usr/local/nccl/lib", "SECRET=x"}})
	assert.NilError(t, err)
	assert.DeepEqual(t, argv, []string{"mpirun", "--allow-run-as-root", "-np", "16", "--map-by", "ppr:8:node", "--host", "node1:8,node2:8",
		"-x", "LD_LIBRARY_PATH", "-x", "NCCL_DEBUG", "-x", "NCCL_TOPO_FILE", "-mca", "coll_hcoll_enable", "0",
		"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"})
	for _, n := range Names() {
		s, err := Lookup(n)
		assert.NilError(t, err)
		_, err = s.Argv(plan.Step{Name: "x", Argv: []string{"a"}}, Options{})
		assert.ErrorContains(t, err, "step x: 0 processes", n)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"all_reduce_perf": "all_reduce_perf", "": "''", "a b": "'a b'", "it's": `'it'\''s'`,
		"$(reboot)": "'$(reboot)'", "x;rm -rf /": "'x;rm -rf /'", "NCCL_TESTS_SPLIT=MOD 2": "'NCCL_TESTS_SPLIT=MOD 2'",
	} {
		assert.Equal(t, ShellQuote(in), want)
	}
	assert.Equal(t, ShellJoin([]string{"echo", "a b", "c"}), "echo 'a b' c")
}

func TestEnviron(t *testing.T) {
	got := Environ([]string{"A=1", "NCCL_P2P_DISABLE=0"}, plan.Step{Env: map[string]string{"NCCL_P2P_DISABLE": "1", "B": "2"}})
	assert.DeepEqual(t, got, []string{"A=1", "B=2", "NCCL_P2P_DISABLE=1"})
}

func TestEnvPrefix(t *testing.T) {
	got := EnvPrefix(plan.Step{Env: map[string]string{"NCCL_IB_HCA": "mlx5_0 mlx5_1", "NCCL_DEBUG": "INFO"}})
	assert.Equal(t, got, "NCCL_DEBUG=INFO NCCL_IB_HCA='mlx5_0 mlx5_1'")
}

// The rank starter's line per flavor, for the options seen in the seeds:
// seed 000 (HPC-X container: --bind-to numa, ppr:8:node, -x NCCL_TOPO_FILE,
// -x NCCL_SOCKET_IFNAME, -mca coll_hcoll_enable 0), seed 002 (-H ip:8,ip:8)
// and seed 003 (ssh on a given port).
func TestMPIRunFlavors(t *testing.T) {
	step := plan.Step{Name: "all_reduce", Argv: []string{"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}, Procs: 16, ProcsPerNode: 8, MPI: true,
		Env: map[string]string{"NCCL_TOPO_FILE": "/workspace/ndv4-topo.xml", "NCCL_SOCKET_IFNAME": "eth0"}}
	rsh := []string{"ssh", "-p", "2222", "-i", "/root/.ssh/id_ed25519", "-o", "BatchMode=yes"}
	environ := []string{"UCX_TLS=tcp", "HOME=/root", "AWS_SECRET_ACCESS_KEY=x"}
	cases := []struct {
		name   string
		flavor string
		o      Options
		want   []string
		err    string
	}{
		{name: "openmpi", flavor: FlavorOpenMPI,
			o: Options{Hosts: []string{"node1", "node2"}, AllowRoot: true, RemoteShell: rsh, BindTo: "numa", WorkDir: "/tmp/gpuaccept-x", Environ: environ},
			want: []string{"mpirun", "--allow-run-as-root", "-np", "16", "--map-by", "ppr:8:node", "--host", "node1:8,node2:8",
				"-x", "NCCL_SOCKET_IFNAME", "-x", "NCCL_TOPO_FILE", "-x", "UCX_TLS", "--bind-to", "numa", "--wdir", "/tmp/gpuaccept-x",
				"--mca", "plm_rsh_agent", "ssh -p 2222 -i /root/.ssh/id_ed25519 -o BatchMode=yes",
				"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}},
		{name: "openmpi default flavor, hcoll off, extra args last", flavor: "",
			o: Options{Hosts: []string{"10.0.0.1"}, DisableHCOLL: true, ExtraArgs: []string{"--mca", "btl", "self,tcp"}, Environ: []string{}},
			want: []string{"mpirun", "-np", "16", "--map-by", "ppr:8:node", "--host", "10.0.0.1:8",
				"-x", "NCCL_SOCKET_IFNAME", "-x", "NCCL_TOPO_FILE", "-mca", "coll_hcoll_enable", "0", "--mca", "btl", "self,tcp",
				"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}},
		{name: "hpcx turns hcoll off", flavor: FlavorHPCX,
			o: Options{Hosts: []string{"node1", "node2"}, AllowRoot: true, BindTo: "numa", Environ: environ},
			want: []string{"mpirun", "--allow-run-as-root", "-np", "16", "--map-by", "ppr:8:node", "--host", "node1:8,node2:8",
				"-x", "NCCL_SOCKET_IFNAME", "-x", "NCCL_TOPO_FILE", "-x", "UCX_TLS", "--bind-to", "numa", "-mca", "coll_hcoll_enable", "0",
				"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}},
		{name: "mpich with a remote shell wrapper", flavor: FlavorMPICH,
			o: Options{Hosts: []string{"node1", "node2"}, AllowRoot: true, RemoteShell: rsh, RemoteShellExec: "/tmp/g/rsh", BindTo: "core", WorkDir: "/tmp/w", Environ: environ},
			want: []string{"mpiexec", "-n", "16", "-ppn", "8", "-hosts", "node1:8,node2:8", "-genvlist", "NCCL_SOCKET_IFNAME,NCCL_TOPO_FILE,UCX_TLS",
				"-bind-to", "core", "-wdir", "/tmp/w", "-launcher", "ssh", "-launcher-exec", "/tmp/g/rsh",
				"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}},
		{name: "mpich with a bare remote shell program", flavor: FlavorMPICH,
			o: Options{RemoteShell: []string{"/usr/bin/ssh"}, Environ: []string{}},
			want: []string{"mpiexec", "-n", "16", "-ppn", "8", "-genvlist", "NCCL_SOCKET_IFNAME,NCCL_TOPO_FILE", "-launcher", "ssh", "-launcher-exec", "/usr/bin/ssh",
				"/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}},
		{name: "mpich needs a program for a remote shell with options", flavor: FlavorMPICH,
			o: Options{RemoteShell: rsh}, err: "MPICH's -launcher-exec takes a program"},
		{name: "mpich has no hcoll", flavor: FlavorMPICH,
			o: Options{DisableHCOLL: true}, err: "MPICH has no coll_hcoll_enable"},
		{name: "plm_rsh_agent splits at spaces", flavor: FlavorOpenMPI,
			o: Options{RemoteShell: []string{"ssh", "-i", "/home/a b/key"}}, err: `remote shell word "/home/a b/key" is empty or holds whitespace`},
		{name: "srun with a PMI plugin, hosts last", flavor: FlavorSrun,
			o: Options{JobName: "gpuaccept-nccl.all_reduce.all_reduce", PMI: "pmix", Hosts: []string{"n1", "n2"}, ExtraArgs: []string{"--container-image=nvcr.io#nvidia/pytorch:24.05-py3"},
				AllowRoot: true, Environ: environ},
			want: []string{"srun", "--job-name=gpuaccept-nccl.all_reduce.all_reduce", "--nodes=2", "--ntasks=16", "--ntasks-per-node=8", "--mpi=pmix", "--kill-on-bad-exit=1",
				"--container-image=nvcr.io#nvidia/pytorch:24.05-py3", "--nodelist=n1,n2", "/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}},
		{name: "srun without PMI", flavor: FlavorSrun, o: Options{},
			want: []string{"srun", "--nodes=2", "--ntasks=16", "--ntasks-per-node=8", "--mpi=none", "--kill-on-bad-exit=1", "/opt/nccl-tests/build/all_reduce_perf", "-g", "1"}},
		{name: "unknown flavor", flavor: "lam", err: `unknown MPI flavor "lam" (known: hpcx, mpich, openmpi, srun)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := Lookup(c.flavor)
			var got []string
			if err == nil {
				got, err = st.Argv(step, c.o)
				// Launchers rely on it: the program comes last, whole.
				if err == nil {
					assert.DeepEqual(t, got[len(got)-len(step.Argv):], step.Argv)
				}
			}
			if c.err != "" {
				assert.ErrorContains(t, err, c.err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, c.want)
		})
	}
}

func TestLookup(t *testing.T) {
	for in, want := range map[string]string{"": FlavorOpenMPI, "openmpi": FlavorOpenMPI, "mpich": FlavorMPICH, "hpcx": FlavorHPCX, "srun": FlavorSrun} {
		got, err := Lookup(in)
		assert.NilError(t, err)
		assert.Equal(t, got.Name(), want)
	}
	_, err := Lookup("OpenMPI")
	assert.ErrorContains(t, err, `unknown MPI flavor "OpenMPI"`)
	assert.DeepEqual(t, Names(), []string{"hpcx", "mpich", "openmpi", "srun"})
	assert.Equal(t, Or(nil).Name(), FlavorOpenMPI)
}

// --mpi-flavor names the mpirun every launcher starts MPI steps with:
// srun is the slurm launcher's choice (--slurm-mpi), refused by name.
func TestForMPIFlavor(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{in: "", want: FlavorOpenMPI},
		{in: "hpcx", want: FlavorHPCX},
		{in: "mpich", want: FlavorMPICH},
		{in: "lam", err: `--mpi-flavor: unknown MPI flavor "lam" (known: hpcx, mpich, openmpi)`},
		{in: "srun", err: "--mpi-flavor srun: srun starts the ranks of a Slurm allocation"},
	} {
		got, err := ForMPIFlavor(c.in)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err)
			continue
		}
		assert.NilError(t, err)
		assert.Equal(t, got.Name(), c.want)
	}
	assert.DeepEqual(t, MPIFlavors(), []string{"hpcx", "mpich", "openmpi"})
}

type fakeStarter struct{ name string }

func (f fakeStarter) Name() string                                { return f.name }
func (fakeStarter) Family() Family                                { return FamilyOpenMPI }
func (fakeStarter) Argv(s plan.Step, o Options) ([]string, error) { return s.Argv, nil }
func (fakeStarter) Env(o Options) []string                        { return nil }

// Two starters under one name is a build mistake, caught at init: the
// second registration panics and the first stays.
func TestRegisterDuplicatePanics(t *testing.T) {
	for _, name := range []string{FlavorOpenMPI, FlavorSrun, ""} {
		func() {
			defer func() {
				r := recover()
				assert.Assert(t, r != nil, "registering %q again did not panic", name)
			}()
			Register(fakeStarter{name})
		}()
	}
	got, err := Lookup(FlavorOpenMPI)
	assert.NilError(t, err)
	assert.Equal(t, got, Starter(openMPI{name: FlavorOpenMPI}))
}

// The wrapper passes Hydra's arguments through after the remote shell's
// own, quoted, so a key path with a space still works there.
func TestRemoteShellScript(t *testing.T) {
	got := RemoteShellScript([]string{"ssh", "-p", "2222", "-i", "/keys/my key"})
	assert.Equal(t, got, "#!/bin/sh\n# written by gpuaccept: the remote shell for the rank starter\nexec ssh -p 2222 -i '/keys/my key' \"$@\"\n")
}

func TestStarterEnv(t *testing.T) {
	rsh := []string{"ssh", "-p", "2222"}
	for _, c := range []struct {
		f    string
		o    Options
		want []string
	}{
		{FlavorOpenMPI, Options{RemoteShell: rsh}, []string{"PRTE_MCA_plm_ssh_agent=ssh -p 2222"}},
		{FlavorHPCX, Options{RemoteShell: rsh}, []string{"PRTE_MCA_plm_ssh_agent=ssh -p 2222"}},
		{FlavorMPICH, Options{RemoteShell: rsh}, nil},
		{FlavorSrun, Options{RemoteShell: rsh}, nil},
		{FlavorOpenMPI, Options{}, nil},
	} {
		s, err := Lookup(c.f)
		assert.NilError(t, err)
		assert.DeepEqual(t, s.Env(c.o), c.want)
	}
}

func TestCheckEnvNames(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"NCCL_DEBUG": "INFO", "_x9": "", "a": "$(reboot)"}, ""},
		{map[string]string{"NCCL_DEBUG": "INFO", "X;touch /tmp/p": "1"}, `step s: environment variable name "X;touch /tmp/p" is not a shell name`},
		{map[string]string{"9LIVES": "1"}, `environment variable name "9LIVES"`},
		{map[string]string{"": "1"}, `environment variable name ""`},
		{map[string]string{"A-B": "1", "A B": "1"}, `environment variable name "A B"`},
	} {
		err := CheckEnvNames(plan.Step{Name: "s", Env: c.env})
		if c.want == "" {
			assert.NilError(t, err)
			continue
		}
		assert.ErrorContains(t, err, c.want)
	}
}

func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "mpirun -np 2 'a b'"},
		{map[string]string{"NCCL_IB_HCA": "mlx5_0 mlx5_1", "NCCL_DEBUG": "INFO"}, "NCCL_DEBUG=INFO NCCL_IB_HCA='mlx5_0 mlx5_1' mpirun -np 2 'a b'"},
	} {
		assert.Equal(t, CommandLine(plan.Step{Env: c.env}, ShellJoin([]string{"mpirun", "-np", "2", "a b"})), c.want)
	}
}

// A name that is no shell name (a step no launcher should get) is still
// printed as one quoted word, never as shell code.
func TestEnvPrefixQuotesBadNames(t *testing.T) {
	got := EnvPrefix(plan.Step{Env: map[string]string{"$(id)": "1", "A B": "x y", "NCCL_DEBUG": "INFO"}})
	assert.Equal(t, got, `'$(id)=1' 'A B=x y' NCCL_DEBUG=INFO`)
}

// Only srun cannot start ranks across hosts a launcher names; the error
// names it and says where it is chosen.
func TestAcrossHosts(t *testing.T) {
	for _, name := range []string{FlavorSrun, "openmpi", "mpich", "hpcx"} {
		s, err := Lookup(name)
		assert.NilError(t, err)
		err = AcrossHosts(s)
		if name == FlavorSrun {
			assert.ErrorContains(t, err, "rank starter srun starts the ranks of a Slurm allocation only")
			continue
		}
		assert.NilError(t, err, name)
	}
	assert.NilError(t, AcrossHosts(nil))
}
