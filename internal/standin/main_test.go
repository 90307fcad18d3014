package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// bin is the folder holding the built stand-in under the benchmarks' names.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "standin-test-")
	if err != nil {
		panic(err)
	}
	bin = dir
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "all_reduce_perf"), ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("build the stand-in: " + err.Error())
	}
	for _, n := range []string{"alltoall_perf", "ib_write_bw"} {
		if err := os.Link(filepath.Join(dir, "all_reduce_perf"), filepath.Join(dir, n)); err != nil {
			os.RemoveAll(dir)
			panic(err)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture writes recording folders whose logs say which folder they come
// from: healthy-1, healthy-2 (nodes), degraded-1, degraded-2, and paired
// logs healthy.log and degraded.log.
func fixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"healthy-1", "healthy-2", "degraded-1", "degraded-2"} {
		f := filepath.Join(root, d, "nccl.all_reduce")
		assert.NilError(t, os.MkdirAll(filepath.Join(f, "all_reduce.files"), 0o755))
		assert.NilError(t, os.WriteFile(filepath.Join(f, "all_reduce.log"), []byte("recording "+d+"\n"), 0o644))
		assert.NilError(t, os.WriteFile(filepath.Join(f, "all_reduce.files", "all_reduce.json"), []byte(`{"from": "`+d+`", "env": []}`), 0o644))
	}
	for _, l := range []string{"healthy", "degraded"} {
		assert.NilError(t, os.WriteFile(filepath.Join(root, l+".log"), []byte("paired "+l+"\n"), 0o644))
	}
	return root
}

// runStandin runs the stand-in as prog with only env set (plus PATH) and returns
// its stdout, stderr and exit code.
func runStandin(t *testing.T, dir, prog string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, prog), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		assert.NilError(t, err)
	}
	return out.String(), errb.String(), code
}

func TestChoosesRecording(t *testing.T) {
	root := fixture(t)
	healthy := "STANDIN_RECORDINGS=" + filepath.Join(root, "healthy-{nodes}")
	degradedDir := "STANDIN_DEGRADED_RECORDINGS=" + filepath.Join(root, "degraded-{nodes}")
	cases := []struct {
		name string
		env  []string
		args []string
		want string // stdout; "" with code 0 means rank > 0 printed nothing
		code int
	}{
		{"no hosts is one node", []string{healthy}, nil, "recording healthy-1\n", 0},
		{"one host", []string{healthy, "GPUACCEPT_HOSTS=n1"}, nil, "recording healthy-1\n", 0},
		{"two hosts", []string{healthy, "GPUACCEPT_HOSTS=n1,n2"}, nil, "recording healthy-2\n", 0},
		{"plain folder", []string{"STANDIN_RECORDINGS=" + filepath.Join(root, "degraded-2"), "GPUACCEPT_HOSTS=n1"}, nil, "recording degraded-2\n", 0},
		{"bad host takes part", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n1,n3", "STANDIN_DEGRADE_HOST=n3"}, nil, "recording degraded-2\n", 0},
		{"bad host alone", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n3", "STANDIN_DEGRADE_HOST=n3"}, nil, "recording degraded-1\n", 0},
		{"one of several bad hosts", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n1,n2", "STANDIN_DEGRADE_HOST=n4,n2"}, nil, "recording degraded-2\n", 0},
		{"bad host elsewhere", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n1,n2", "STANDIN_DEGRADE_HOST=n3"}, nil, "recording healthy-2\n", 0},
		{"host names match whole", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n10,n2", "STANDIN_DEGRADE_HOST=n1"}, nil, "recording healthy-2\n", 0},
		{"bad host without hosts set", []string{healthy, degradedDir, "STANDIN_DEGRADE_HOST=n3"}, nil, "recording healthy-1\n", 0},
		{"bad HCA on bad host", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n3", "STANDIN_DEGRADE_HOST=n3", "STANDIN_DEGRADE_HCA=mlx5_1"}, []string{"-d", "mlx5_1"}, "recording degraded-1\n", 0},
		{"other HCA on bad host", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n3", "STANDIN_DEGRADE_HOST=n3", "STANDIN_DEGRADE_HCA=mlx5_1"}, []string{"-d", "mlx5_0"}, "recording healthy-1\n", 0},
		{"bad HCA, --ib-dev=", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n3", "STANDIN_DEGRADE_HOST=n3", "STANDIN_DEGRADE_HCA=mlx5_1"}, []string{"--ib-dev=mlx5_1"}, "recording degraded-1\n", 0},
		{"bad HCA on any host", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n1,n2", "STANDIN_DEGRADE_HCA=mlx5_1"}, []string{"--ib-dev", "mlx5_1"}, "recording degraded-2\n", 0},
		{"bad HCA, other host", []string{healthy, degradedDir, "GPUACCEPT_HOSTS=n1", "STANDIN_DEGRADE_HOST=n3", "STANDIN_DEGRADE_HCA=mlx5_1"}, []string{"-d", "mlx5_1"}, "recording healthy-1\n", 0},
		{"degraded without its folder", []string{healthy, "GPUACCEPT_HOSTS=n3", "STANDIN_DEGRADE_HOST=n3"}, nil, "", 6},
		{"no recordings", []string{"GPUACCEPT_HOSTS=n1"}, nil, "", 6},
		{"no such test", []string{"STANDIN_RECORDINGS=" + filepath.Join(root, "nowhere")}, nil, "", 1},
		{"rank 1 prints nothing", []string{healthy, "OMPI_COMM_WORLD_RANK=1"}, nil, "", 0},
		{"srun task 1 prints nothing", []string{healthy, "SLURM_PROCID=1"}, nil, "", 0},
		{"pmix rank 3 prints nothing", []string{healthy, "PMIX_RANK=3"}, nil, "", 0},
		{"srun task 0 prints", []string{healthy, "SLURM_PROCID=0"}, nil, "recording healthy-1\n", 0},
		{"Open MPI's rank before srun's", []string{healthy, "SLURM_PROCID=1", "OMPI_COMM_WORLD_RANK=0"}, nil, "recording healthy-1\n", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := runStandin(t, t.TempDir(), "all_reduce_perf", c.env, c.args...)
			assert.Equal(t, code, c.code, errs)
			assert.Equal(t, out, c.want, errs)
		})
	}
}

// The -J file comes from the chosen folder, with the process's environment.
func TestJSONFromChosenFolder(t *testing.T) {
	root := fixture(t)
	work := t.TempDir()
	_, errs, code := runStandin(t, work, "all_reduce_perf", []string{"STANDIN_RECORDINGS=" + filepath.Join(root, "healthy-{nodes}"),
		"STANDIN_DEGRADED_RECORDINGS=" + filepath.Join(root, "degraded-{nodes}"), "GPUACCEPT_HOSTS=n1,n2", "STANDIN_DEGRADE_HOST=n2"}, "-J", "r.json")
	assert.Equal(t, code, 0, errs)
	data, err := os.ReadFile(filepath.Join(work, "r.json"))
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(data), `"from": "degraded-2"`), string(data))
	assert.Assert(t, strings.Contains(string(data), `"GPUACCEPT_HOSTS=n1,n2"`), string(data))
}

func TestPairedLog(t *testing.T) {
	root := fixture(t)
	logs := []string{"STANDIN_LOG=" + filepath.Join(root, "healthy.log"), "STANDIN_DEGRADED_LOG=" + filepath.Join(root, "degraded.log")}
	cases := []struct {
		name string
		env  []string
		args []string
		want string
		code int
	}{
		{"healthy", []string{"GPUACCEPT_HOSTS=a,b"}, []string{"-d", "ionic_1"}, "paired healthy\n", 0},
		{"bad host", []string{"GPUACCEPT_HOSTS=a,b", "STANDIN_DEGRADE_HOST=b"}, []string{"-d", "ionic_1"}, "paired degraded\n", 0},
		{"bad HCA of bad host", []string{"GPUACCEPT_HOSTS=a,b", "STANDIN_DEGRADE_HOST=b", "STANDIN_DEGRADE_HCA=ionic_1"}, []string{"-d", "ionic_1", "a"}, "paired degraded\n", 0},
		{"other HCA of bad host", []string{"GPUACCEPT_HOSTS=a,b", "STANDIN_DEGRADE_HOST=b", "STANDIN_DEGRADE_HCA=ionic_1"}, []string{"-d", "ionic_7"}, "paired healthy\n", 0},
		{"HCA word elsewhere", []string{"GPUACCEPT_HOSTS=a,b", "STANDIN_DEGRADE_HOST=b", "STANDIN_DEGRADE_HCA=ionic_1"}, []string{"-x", "ionic_1", "-d", "ionic_7"}, "paired healthy\n", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := runStandin(t, t.TempDir(), "ib_write_bw", append(append([]string{}, logs...), c.env...), c.args...)
			assert.Equal(t, code, c.code, errs)
			assert.Equal(t, out, c.want, errs)
		})
	}
	_, errs, code := runStandin(t, t.TempDir(), "ib_write_bw", []string{logs[0], "GPUACCEPT_HOSTS=a", "STANDIN_DEGRADE_HOST=a"})
	assert.Equal(t, code, 6)
	assert.Assert(t, strings.Contains(errs, "STANDIN_DEGRADED_LOG is not set"), errs)
}

// rccl-tests binaries have nccl-tests' names: the MI355X recordings of
// seed 004 (rccl.TEST/TEST.log) replay as they are.
func TestRCCLRecordings(t *testing.T) {
	rec, err := filepath.Abs("../../testdata/recordings/mi355x-seed004/singlenode/raw")
	assert.NilError(t, err)
	for _, prog := range []string{"all_reduce_perf", "alltoall_perf"} {
		out, errs, code := runStandin(t, t.TempDir(), prog, []string{"STANDIN_RECORDINGS=" + rec})
		assert.Equal(t, code, 0, errs)
		want, err := os.ReadFile(filepath.Join(rec, "rccl."+strings.TrimSuffix(prog, "_perf"), strings.TrimSuffix(prog, "_perf")+".log"))
		assert.NilError(t, err)
		assert.Equal(t, out, string(want))
		assert.Assert(t, strings.HasPrefix(out, "# rccl-tests version"), prog)
	}
}

// The role, HCA and port of perftest argvs as plugins/ibperf plans them
// (and as perftest's man page spells the options).
func TestPerftestArgv(t *testing.T) {
	for _, c := range []struct {
		name string
		argv []string
		want perftest
	}{
		{"planned server", strings.Fields("ib_write_bw -d ionic_2 -p 10001 -x 1 -q 4 -n 5000 -a -F -b --report_gbits"), perftest{"ionic_2", "10001", ""}},
		{"planned client", strings.Fields("ib_write_bw -d ionic_3 -p 10001 -x 1 -q 4 -n 5000 -a -F -b --report_gbits 127.0.0.1"), perftest{"ionic_3", "10001", "127.0.0.1"}},
		{"server with json file", strings.Fields("ib_write_bw -d mlx5_0 -p 18515 -a -F -b --report_gbits --out_json --out_json_file=server.0.json"), perftest{"mlx5_0", "18515", ""}},
		{"server with extra valued option last", strings.Fields("ib_write_bw -d mlx5_0 --report_gbits --mtu 4096"), perftest{"mlx5_0", "18515", ""}},
		{"gdr client", strings.Fields("ib_write_bw -d ionic_1 -p 5001 -i 1 -x 1 -q 4 --tclass 104 -a -F -b --report_gbits --use_rocm=1 n1"), perftest{"ionic_1", "5001", "n1"}},
		{"long forms", strings.Fields("ib_write_bw --ib-dev=mlx5_1 --port 20000 --use_cuda 0 10.0.0.1"), perftest{"mlx5_1", "20000", "10.0.0.1"}},
		{"nothing", []string{"ib_write_bw"}, perftest{"", "18515", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := perftestArgv(c.argv)
			assert.Equal(t, got, c.want)
			assert.Equal(t, got.role(), map[bool]string{true: "client", false: "server"}[c.want.server != ""])
		})
	}
}

// One setting of STANDIN_LOG serves both sides ({role}, or a folder of
// server.log and client.log); STANDIN_DEGRADE_ROLE degrades one side;
// STANDIN_DEVICE=argv names the planned HCA in the Device lines.
func TestPairedLogByRole(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"healthy", "degraded"} {
		assert.NilError(t, os.MkdirAll(filepath.Join(root, v), 0o755))
		for _, side := range []string{"server", "client"} {
			text := v + " " + side + "\nDual-port : OFF Device : ionic_7\n"
			assert.NilError(t, os.WriteFile(filepath.Join(root, v, side+".log"), []byte(text), 0o644))
		}
	}
	byRole := []string{"STANDIN_LOG=" + filepath.Join(root, "healthy", "{role}.log"), "STANDIN_DEGRADED_LOG=" + filepath.Join(root, "degraded", "{role}.log")}
	byDir := []string{"STANDIN_LOG=" + filepath.Join(root, "healthy"), "STANDIN_DEGRADED_LOG=" + filepath.Join(root, "degraded")}
	server := []string{"-d", "ionic_2", "-p", "10000", "--report_gbits"}
	client := []string{"-d", "ionic_2", "-p", "10000", "--report_gbits", "n1"}
	dev := "Dual-port : OFF Device : ionic_7\n"
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
		code int
	}{
		{"server by {role}", byRole, server, "healthy server\n" + dev, 0},
		{"client by {role}", byRole, client, "healthy client\n" + dev, 0},
		{"client by folder", byDir, client, "healthy client\n" + dev, 0},
		{"bad client side", append([]string{"STANDIN_DEGRADE_ROLE=client"}, byRole...), client, "degraded client\n" + dev, 0},
		{"bad client side, server", append([]string{"STANDIN_DEGRADE_ROLE=client"}, byRole...), server, "healthy server\n" + dev, 0},
		{"bad HCA of the server side", append([]string{"STANDIN_DEGRADE_ROLE=server", "STANDIN_DEGRADE_HCA=ionic_2"}, byDir...), server, "degraded server\n" + dev, 0},
		{"other HCA of the server side", append([]string{"STANDIN_DEGRADE_ROLE=server", "STANDIN_DEGRADE_HCA=ionic_3"}, byDir...), server, "healthy server\n" + dev, 0},
		{"device from argv", append([]string{"STANDIN_DEVICE=argv"}, byRole...), client, "healthy client\nDual-port : OFF Device : ionic_2\n", 0},
		{"unknown role", append([]string{"STANDIN_DEGRADE_ROLE=both"}, byRole...), client, "", 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := runStandin(t, t.TempDir(), "ib_write_bw", c.env, c.args...)
			assert.Equal(t, code, c.code, errs)
			assert.Equal(t, out, c.want, errs)
		})
	}
}

// A pair started as a plan starts it (STANDIN_LISTEN=argv for both sides,
// on the argv's port): the server waits for the client, and when either
// side is degraded both replay the degraded log, as both ends of one slow
// link measure it.
func TestPairOverArgv(t *testing.T) {
	rec, err := filepath.Abs("../../testdata/recordings")
	assert.NilError(t, err)
	logs := []string{"STANDIN_LOG=" + filepath.Join(rec, "mi355x-seed004/multinode/raw/ibperf.write_bw/{role}.0.log"),
		"STANDIN_DEGRADED_LOG=" + filepath.Join(rec, "mi355x-seed004-degraded/multinode/raw/ibperf.write_bw/{role}.0.log"),
		"STANDIN_LISTEN=argv", "STANDIN_DEVICE=argv", "STANDIN_PAUSE_AFTER=Waiting for client to connect", "PATH=" + os.Getenv("PATH")}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	for _, c := range []struct {
		name string
		bad  string // STANDIN_DEGRADE_HCA, or "link S:C": STANDIN_DEGRADE_LINK
		want string // the bandwidth at 8 MiB both sides print
	}{
		{"healthy", "ionic_4", "8388608 20000 779.21 779.21 0.011611"},
		{"bad server HCA", "ionic_5", "8388608 20000 389.61 389.61 0.005805"},
		{"bad client HCA", "ionic_6", "8388608 20000 389.61 389.61 0.005805"},
		{"bad link", "link ionic_5:ionic_6", "8388608 20000 389.61 389.61 0.005805"},
		{"link the other way round is healthy", "link ionic_6:ionic_5", "8388608 20000 779.21 779.21 0.011611"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := "STANDIN_DEGRADE_HCA=" + c.bad
			if l, ok := strings.CutPrefix(c.bad, "link "); ok {
				bad = "STANDIN_DEGRADE_LINK=" + l
			}
			env := append([]string{bad}, logs...)
			srv := exec.Command(filepath.Join(bin, "ib_write_bw"), "-d", "ionic_5", "-p", port, "-a", "-F", "-b", "--report_gbits")
			srv.Env = env
			var srvOut bytes.Buffer
			pr, pw := io.Pipe()
			srv.Stdout = io.MultiWriter(&srvOut, pw)
			srv.Stderr = os.Stderr
			assert.NilError(t, srv.Start())
			// Start the client once the server says it waits, as the
			// launcher does with the plan's ready marker.
			sc := bufio.NewScanner(pr)
			for sc.Scan() && !strings.Contains(sc.Text(), "Waiting for client to connect") {
			}
			go io.Copy(io.Discard, pr)
			out, errs, code := runStandin(t, t.TempDir(), "ib_write_bw", env, "-d", "ionic_6", "-p", port, "-a", "-F", "-b", "--report_gbits", "127.0.0.1")
			assert.Equal(t, code, 0, errs)
			assert.NilError(t, srv.Wait())
			pw.Close()
			assert.Assert(t, strings.Contains(out, c.want), out)
			assert.Assert(t, strings.Contains(out, "Device : ionic_6"), out)
			assert.Assert(t, strings.Contains(srvOut.String(), c.want), srvOut.String())
			assert.Assert(t, strings.Contains(srvOut.String(), "Device : ionic_5"), srvOut.String())
			assert.Assert(t, strings.HasPrefix(srvOut.String(), "[user@Aliyun1 ~]$ Using sampled CPU speed"), srvOut.String())
		})
	}
	// No server on the port: the client fails as perftest's does.
	_, errs, code := runStandin(t, t.TempDir(), "ib_write_bw", logs, "-d", "ionic_6", "-p", port, "127.0.0.1")
	assert.Equal(t, code, 1)
	assert.Assert(t, strings.Contains(errs, "Couldn't connect to 127.0.0.1:"+port), errs)
}
