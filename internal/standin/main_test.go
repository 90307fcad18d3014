package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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
