package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	pb "github.com/gpuaccept/gpuaccept/framework/pluginapi/proto"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// pythonPlugin is the folder of the Python example plugin, an external
// plugin gpuaccept finds on --plugin-path; the test is skipped (failed
// under GPUACCEPT_INTEGRATION=required) when Debian's python3-grpcio and
// python3-protobuf, which it runs on, are not installed.
func pythonPlugin(t testing.TB) string {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		testenv.Missing(t, "the Python example plugin needs /usr/bin/python3 with Debian's python3-grpcio and python3-protobuf "+
			"(apt-get install python3-grpcio python3-protobuf, or scripts/testenv.sh up python): %v: %s", err, out)
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "plugin-python"))
	assert.NilError(t, err)
	return dir
}

// pyRun is the part of --format json the Python plugin's tests read.
type pyRun struct {
	Status string `json:"status"`
	Tests  []struct {
		Name     string   `json:"name"`
		Status   string   `json:"status"`
		Message  string   `json:"message"`
		Commands []string `json:"commands"`
		Metrics  []struct {
			Name  string  `json:"name"`
			Value float64 `json:"value"`
		} `json:"metrics"`
		Info map[string]string `json:"info"`
	} `json:"tests"`
}

func pyCLI(t *testing.T, args ...string) (int, pyRun, string) {
	t.Helper()
	code, out, errs := cli(t, append(args, "--format", "json")...)
	var r pyRun
	assert.NilError(t, json.Unmarshal([]byte(out), &r), out+errs)
	assert.Equal(t, len(r.Tests), 1, out)
	return code, r, errs
}

const h200AllReduce = "testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.log"

// A plugin in another language, through the whole pipeline: gpuaccept finds
// the Python plugin on --plugin-path, checks the example SKU against its
// description, runs the step it plans under the local launcher (a stand-in
// all_reduce_perf replays the real 2 x H200 run) and judges what it parsed.
func TestPythonPluginRun(t *testing.T) {
	plugins := pythonPlugin(t)
	bin := t.TempDir()
	rec, err := filepath.Abs(filepath.Join("..", "..", h200AllReduce))
	assert.NilError(t, err)
	assert.NilError(t, os.WriteFile(filepath.Join(bin, "all_reduce_perf"), []byte("#!/bin/sh\nexec cat \"$REC\"\n"), 0o755))
	out := filepath.Join(t.TempDir(), "out")
	code, r, errs := pyCLI(t, "--baselines", filepath.Join(plugins, "skus"), "--sku", "h200-ncclavg", "--suite", "example",
		"--plugin-path", plugins, "--launcher", "local", "--gpus-per-node", "2", "--out", out,
		"--param", "bindir="+bin, "--param", "env.REC="+rec, "--timeout", "1m")
	assert.Equal(t, code, 0, errs)
	te := r.Tests[0]
	assert.Equal(t, te.Name, "ncclavg.all_reduce")
	assert.Equal(t, te.Status, "pass", "%+v", te)
	assert.Equal(t, te.Metrics[0].Name, "avg_busbw")
	assert.Equal(t, te.Metrics[0].Value, 103.407)
	assert.Equal(t, te.Info["gpu"], "NVIDIA H200")
	assert.Assert(t, strings.Contains(te.Commands[0], "all_reduce_perf -b 8 -e 4G -f 2 -g 2"), te.Commands)
	data, err := os.ReadFile(filepath.Join(out, layout.Raw, "ncclavg.all_reduce", "all_reduce.log"))
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(data), "# Avg bus bandwidth    : 103.407"))

	// A plan error reaches the user as the plugin's message, not as a
	// gRPC status or a Python traceback.
	code, stdout, stderr := cli(t, "--baselines", filepath.Join(plugins, "skus"), "--sku", "h200-ncclavg", "--suite", "example",
		"--plugin-path", plugins, "--launcher", "local", "--gpus-per-node", "2", "--dry-run", "--param", "ncclavg:bogus=1")
	all := stdout + stderr
	assert.Assert(t, code != 0, all)
	assert.Assert(t, strings.Contains(all, `unknown parameter 'bogus' (known: bindir, env.NAME, maxbytes)`), all)
	assert.Assert(t, !strings.Contains(all, "rpc error") && !strings.Contains(all, "Traceback"), all)
}

// gpuaccept check judges existing logs through the Python plugin: the
// framework's gates (GPU model, rank count) and the baseline apply to an
// external plugin's numbers as to a built-in one's.
func TestPythonPluginCheck(t *testing.T) {
	plugins := pythonPlugin(t)
	skus := filepath.Join(plugins, "skus")
	repo := filepath.Join("..", "..")
	healthy := filepath.Join(repo, h200AllReduce)
	// A degraded copy: the real run cut before its footer, as a crashed
	// or killed run ends.
	full := readFile(t, healthy)
	cut := writeFile(t, "all_reduce.log", full[:strings.Index(full, "# Out of bounds")])
	for _, tc := range []struct {
		name    string
		args    []string
		file    string
		status  string
		message string
		value   float64
	}{
		{"healthy MPI run", []string{"--baselines", skus, "--sku", "h200-ncclavg"}, filepath.Join(repo, "testdata/recordings/h200-1x2-mpi/nccl.all_reduce/all_reduce.log"), "pass", "", 106.032},
		{"NVLink P2P disabled", []string{"--baselines", skus, "--sku", "h200-ncclavg"}, filepath.Join(repo, "testdata/recordings/h200x2-2026-11-30-final/p2poff/raw/nccl.all_reduce/all_reduce.log"), "fail", "avg_busbw 12.1 GB/s below 93.1 (baseline 103.4 -10%)", 12.0608},
		{"another GPU's SKU", []string{"--sku", "a100-ndmv4"}, healthy, "fail", `GPU model: the output shows "NVIDIA H200", SKU a100-ndmv4 is`, 103.407},
		{"cut before the footer", []string{"--baselines", skus, "--sku", "h200-ncclavg"}, cut, "error", "all_reduce.log: no '# Avg bus bandwidth' line: the run did not finish", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"check", "--plugin-path", plugins, "--test", "ncclavg.all_reduce", "--nodes", "1", "--gpus-per-node", "2"}, tc.args...)
			_, r, errs := pyCLI(t, append(args, tc.file)...)
			te := r.Tests[0]
			assert.Equal(t, te.Status, tc.status, "%+v %s", te, errs)
			assert.Assert(t, strings.Contains(te.Message, tc.message), "%q", te.Message)
			if tc.value != 0 {
				assert.Equal(t, te.Metrics[0].Value, tc.value)
			}
		})
	}
	// At a scope of 4 GPUs the 2 ranks the log lists fail the plugin's
	// rank count gate, though no baseline exists there.
	_, r, _ := pyCLI(t, "check", "--plugin-path", plugins, "--test", "ncclavg.all_reduce", "--nodes", "1", "--gpus-per-node", "4",
		"--baselines", skus, "--sku", "h200-ncclavg", healthy)
	assert.Equal(t, r.Tests[0].Status, "fail")
	assert.Assert(t, strings.Contains(r.Tests[0].Message, "rank count: the output lists 2 ranks, the scope has 4"), r.Tests[0].Message)
}

// The plugin keeps the rest of the contract: run by hand it refuses to
// serve; started as gpuaccept starts it, with no socket folder, it prints
// the TCP handshake line and serves the health service; and it exits once
// its parent is gone (here a shell that started it and ended).
func TestPythonPluginHandshakeAndParent(t *testing.T) {
	plugin := filepath.Join(pythonPlugin(t), "gpuaccept-plugin-ncclavg")
	out, err := exec.Command(plugin).CombinedOutput()
	assert.ErrorContains(t, err, "exit status 1")
	assert.Assert(t, strings.Contains(string(out), "This is a gpuaccept plugin"), string(out))

	// The shell, the plugin's parent, ends when its standard input closes:
	// after the plugin has served (a parent that dies before the plugin has
	// read its parent pid is not seen to die).
	sh := exec.Command("/bin/sh", "-c", `"$0" & echo "pid $!"; read x; exit 0`, plugin)
	sh.Env = append(os.Environ(), "GPUACCEPT_PLUGIN=test-plugin-v1", "PLUGIN_PROTOCOL_VERSIONS=1", "PLUGIN_UNIX_SOCKET_DIR=")
	stdout, err := sh.StdoutPipe()
	assert.NilError(t, err)
	stdin, err := sh.StdinPipe()
	assert.NilError(t, err)
	t.Cleanup(func() { stdin.Close() }) // a failed test still ends the shell, and so the plugin
	assert.NilError(t, sh.Start())
	lines := bufio.NewScanner(stdout)
	var pid int
	var handshake string
	for (pid == 0 || handshake == "") && lines.Scan() {
		if p, ok := strings.CutPrefix(lines.Text(), "pid "); ok {
			pid, err = strconv.Atoi(p)
			assert.NilError(t, err)
		} else {
			handshake = lines.Text()
		}
	}
	assert.Assert(t, strings.HasPrefix(handshake, "1|1|tcp|127.0.0.1:") && strings.HasSuffix(handshake, "|grpc"), handshake)
	// go-plugin's health service answers for "plugin", beside the
	// plugin's own service.
	conn, err := grpc.NewClient(strings.Split(handshake, "|")[3], grpc.WithTransportCredentials(insecure.NewCredentials()))
	assert.NilError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	health, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin"})
	assert.NilError(t, err)
	assert.Equal(t, health.Status, healthpb.HealthCheckResponse_SERVING)
	d, err := pb.NewPluginClient(conn).Describe(ctx, &pb.DescribeRequest{})
	assert.NilError(t, err)
	assert.Equal(t, d.Name, "ncclavg")
	assert.NilError(t, stdin.Close())
	assert.NilError(t, sh.Wait())
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("plugin %d still runs 10 s after its parent ended", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alive says process pid runs (a zombie, ended and not yet reaped by its
// new parent, does not).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// The message classes the Python plugin uses were generated from the proto
// the Go side was: regenerate plugin_pb2.py with the command in
// plugin.proto when the proto changes.
func TestPythonPluginMessagesMatchTheProto(t *testing.T) {
	dir := pythonPlugin(t)
	cmd := exec.Command("/usr/bin/python3", "-B", "-c", "import plugin_pb2; print(plugin_pb2.DESCRIPTOR.serialized_pb.hex())")
	cmd.Dir = dir
	out, err := cmd.Output()
	assert.NilError(t, err)
	raw, err := hex.DecodeString(strings.TrimSpace(string(out)))
	assert.NilError(t, err)
	var py descriptorpb.FileDescriptorProto
	assert.NilError(t, proto.Unmarshal(raw, &py))
	goDesc := protodesc.ToFileDescriptorProto(pb.File_framework_pluginapi_proto_plugin_proto)
	// The files differ only in the path protoc was given, and in the JSON
	// names Go's descriptor spells out (protoc leaves the defaults out).
	py.Name, goDesc.Name = nil, nil
	var strip func([]*descriptorpb.DescriptorProto)
	strip = func(ms []*descriptorpb.DescriptorProto) {
		for _, m := range ms {
			for _, f := range m.Field {
				f.JsonName = nil
			}
			strip(m.NestedType)
		}
	}
	strip(py.MessageType)
	strip(goDesc.MessageType)
	assert.Assert(t, len(py.MessageType) > 0)
	assert.Assert(t, proto.Equal(&py, goDesc), "examples/plugin-python/plugin_pb2.py is not generated from framework/pluginapi/proto/plugin.proto (regenerate it with the command in plugin.proto)")
}

// The Python plugin's parser answers every input with a result, never a
// failed call (an exception would cost the test an error naming a Python
// bug): go test -fuzz FuzzPythonPluginParse ./cmd/gpuaccept. The seeds are
// the real logs the tests above judge, and their copies cut before the
// footer.
func FuzzPythonPluginParse(f *testing.F) {
	// One plugin process for every input: starting it costs far more than
	// a call.
	h := &pluginapi.Host{Path: []string{pythonPlugin(f)}}
	f.Cleanup(h.Close)
	repo := filepath.Join("..", "..")
	for _, p := range []string{h200AllReduce, "testdata/recordings/h200-1x2-mpi/nccl.all_reduce/all_reduce.log",
		"testdata/recordings/h200x2-2026-11-30-final/p2poff/raw/nccl.all_reduce/all_reduce.log"} {
		data, err := os.ReadFile(filepath.Join(repo, p))
		assert.NilError(f, err)
		f.Add(data)
		f.Add(data[:strings.Index(string(data), "# Out of bounds")])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		log := filepath.Join(t.TempDir(), "all_reduce.log")
		assert.NilError(t, os.WriteFile(log, data, 0o644))
		_, err := h.Parse(context.Background(), "ncclavg", pluginapi.ParseRequest{Test: "all_reduce",
			Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 2}}, Outputs: []plan.Output{{Step: "check", Log: log}}})
		assert.NilError(t, err)
	})
}
