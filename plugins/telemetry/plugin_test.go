package telemetry

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

func TestDescribe(t *testing.T) {
	d, err := Plugin{}.Describe(context.Background())
	assert.NilError(t, err)
	assert.NilError(t, d.Check(PluginName))
	ti, ok := d.Test(TestName)
	assert.Assert(t, ok)
	assert.DeepEqual(t, ti.Roles, []string{plan.Monitor})
}

// One monitor step per node, each on its node, named as a step of its
// role must be (pluginapi.CheckRoles), waiting for the sampler's marker.
func TestPlan(t *testing.T) {
	topo := plan.Topology{Scope: plan.Scope{Nodes: 3, GPUsPerNode: 8}}
	p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: TestName, Topology: topo, Params: map[string]string{"interval_ms": "500"}})
	assert.NilError(t, err)
	assert.NilError(t, p.Validate())
	assert.NilError(t, pluginapi.CheckRoles(p, []string{plan.Monitor}))
	assert.Equal(t, len(p.Steps), 3)
	for i, s := range p.Steps {
		assert.Equal(t, s.Name, "monitor."+strconv.Itoa(i))
		assert.Equal(t, s.Role, plan.Monitor)
		assert.Equal(t, s.Host, i)
		assert.Equal(t, s.Procs, 1)
		assert.Equal(t, s.ProcsPerNode, 1)
		assert.Equal(t, s.ReadyMarker, ReadyMarker)
		assert.DeepEqual(t, s.Argv, []string{"/bin/sh", "-c", Script, "gpuaccept-telemetry", "500", strconv.Itoa(i)})
	}
	def, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: TestName, Topology: topo})
	assert.NilError(t, err)
	assert.Equal(t, def.Steps[0].Argv[4], "1000")
}

func TestPlanRefuses(t *testing.T) {
	one := plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}
	for _, c := range []struct {
		name string
		req  pluginapi.PlanRequest
		want string
	}{
		{"unknown test", pluginapi.PlanRequest{Test: "watch", Topology: one}, "unknown test telemetry.watch"},
		{"interval too short", pluginapi.PlanRequest{Test: TestName, Topology: one, Params: map[string]string{"interval_ms": "50"}}, "parameter interval_ms"},
		{"interval not a number", pluginapi.PlanRequest{Test: TestName, Topology: one, Params: map[string]string{"interval_ms": "1s"}}, `"1s" is not a whole number of ms`},
		{"undeclared parameter", pluginapi.PlanRequest{Test: TestName, Topology: one, Params: map[string]string{"interval": "1000"}}, "interval"},
		{"no node", pluginapi.PlanRequest{Test: TestName, Topology: plan.Topology{Scope: plan.Scope{GPUsPerNode: 8}}}, "telemetry.sample: topology"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Plugin{}.Plan(context.Background(), c.req)
			assert.ErrorContains(t, err, c.want)
		})
	}
}

// Parse refuses nothing it can read: no output is an error (nothing
// sampled, nothing to keep), an empty log a note, a file that is no
// sampler's and no tool's output an error naming it.
func TestParseEdges(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "monitor.0.log")
	assert.NilError(t, os.WriteFile(empty, nil, 0o600))
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: TestName})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, pluginapi.NoOutputsError)

	p, err = Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: TestName, Outputs: []plan.Output{{Step: "monitor.0", Log: empty}}})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, "")
	_, tel, err := result.StripTelemetry(p)
	assert.NilError(t, err)
	assert.DeepEqual(t, tel.Notes, []string{"monitor.0: the sampler printed nothing"})

	// A real file of another tool: the recording's README.
	other := "../../testdata/recordings/h200x1-2026-12-01/README.md"
	p, err = Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: TestName, Outputs: []plan.Output{{Step: "monitor.1", Log: other}}})
	assert.NilError(t, err)
	assert.ErrorContains(t, errors.New(p.Error), "monitor.1 ("+other+"): not the telemetry sampler's output")
}

// Summarise on a long run: the series keeps at most MaxTelemetryPoints
// points, each the worst of its bucket; slowdowns are counted per sample;
// counters that rose are new errors. The samples are built from one real
// reading (the recorded H200's) varied over time.
func TestSummariseLong(t *testing.T) {
	rd, err := ReadNvidiaSMI(strings.NewReader(mustRead(t, filepath.Join(fieldDir, "nvsmi-h200-torchbench-before", "smi-before.csv"))), "node0")
	assert.NilError(t, err)
	assert.Equal(t, len(rd.Samples), 1)
	base := rd.Samples[0]
	var ss []Sample
	for i := 0; i < 1000; i++ {
		s := base
		s.T = 1_800_000_000 + float64(i)
		s.SMClock, s.Util, s.ECCCorrected = 1980, 100, 0
		s.HasReasons, s.Reasons = true, 0
		if i >= 500 && i < 512 {
			s.SMClock, s.Reasons = 1100, 0x8|0x40 // HW slowdown, HW thermal
			s.Temp = 91
		}
		if i == 999 {
			s.ECCCorrected = 3
		}
		ss = append(ss, s)
	}
	gs := Summarise(ss)
	assert.Equal(t, len(gs), 1)
	g := gs[0]
	assert.Equal(t, g.Samples, 1000)
	assert.Equal(t, g.First, 1_800_000_000.0)
	assert.Equal(t, g.Last, 1_800_000_999.0)
	assert.DeepEqual(t, g.Slowdown, map[string]int{"hw_slowdown": 12, "hw_thermal_slowdown": 12})
	assert.Equal(t, g.SMClock.Min, 1100.0)
	assert.Equal(t, g.SMClock.Median, 1980.0)
	assert.Equal(t, g.Temp.Max, 91.0)
	assert.DeepEqual(t, g.NewErrors, []string{"volatile corrected ECC errors rose from 0 to 3"})
	assert.Assert(t, len(g.Series) <= result.MaxTelemetryPoints)
	assert.Equal(t, len(g.Series), 200) // 5 samples a point
	p := g.Series[100]                  // samples 500-504
	assert.Equal(t, p.T, 1_800_000_500.0)
	assert.Equal(t, p.SMClock, 1100.0)
	assert.Equal(t, p.Temp, 91.0)
	assert.Equal(t, p.Slowdown, "hw_slowdown+hw_thermal_slowdown")
	assert.Equal(t, g.Series[99].Slowdown, "")
	// Busy at Gen4 on a Gen5 link: downgraded.
	ss[10].PCIeGen, ss[10].PCIeGenMax = 4, 5
	assert.Assert(t, Summarise(ss)[0].PCIeDowngraded)
	// The same while idle is the link saving power.
	ss[10].Util = 0
	assert.Assert(t, !Summarise(ss)[0].PCIeDowngraded)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	assert.NilError(t, err)
	return string(b)
}

// fakeTool writes an executable shell script named name into dir.
func fakeTool(t *testing.T, dir, name, body string) {
	t.Helper()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755))
}

// alive says process pid still runs (and is no zombie of ours).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(stat))
	return len(f) < 3 || f[2] != "Z"
}

// TestSampleScript runs sample.sh with a fake nvidia-smi and dmesg on
// PATH, which print what the H200 of testdata/recordings printed (its
// --query-gpu CSV, its nvidia-smi -q, its dmesg; after the start, the
// dmesg with an XID 79 on its bus that plugins/health's tests use): the
// script prints its ready marker, samples, and on TERM stops its sampler,
// leaves no process behind, prints the new XID and ends with status 0;
// its log parses into the GPU's telemetry.
func TestSampleScript(t *testing.T) {
	if _, err := exec.LookPath("mkfifo"); err != nil {
		t.Skip("no mkfifo")
	}
	rec, err := filepath.Abs("../../testdata/recordings/h200x1-2026-12-01/smi")
	assert.NilError(t, err)
	xid, err := filepath.Abs("../health/testdata/h200/dmesg-xid79.txt")
	assert.NilError(t, err)
	bin, tmp := t.TempDir(), t.TempDir()
	pids := filepath.Join(bin, "pids")
	fakeTool(t, bin, "nvidia-smi", fmt.Sprintf(`echo $$ >> %[1]q
case "$*" in
*"-q -d PCIE"*) cat %[2]q/nvidia-smi-q.txt ;;
*-lms*) cat %[2]q/query-gpu.csv; while :; do sed -n 2p %[2]q/query-gpu.csv; sleep 0.05; done ;;
esac
`, pids, rec))
	fakeTool(t, bin, "dmesg", fmt.Sprintf(`n=$(cat %[1]q/n 2>/dev/null || echo 0); n=$((n + 1)); echo $n > %[1]q/n
if [ $n -le 2 ]; then cat %[2]q/dmesg-nvrm.txt; else cat %[3]q; fi
`, bin, rec, xid))
	cmd := exec.Command("/bin/sh", "-c", Script, "gpuaccept-telemetry", "100", "0")
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "GPUACCEPT_NODE_NAME=node0", "TMPDIR="+tmp)
	out, err := cmd.StdoutPipe()
	assert.NilError(t, err)
	cmd.Stderr = cmd.Stdout
	assert.NilError(t, cmd.Start())
	var mu sync.Mutex
	var log strings.Builder
	ready, samples := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			l := sc.Text()
			mu.Lock()
			log.WriteString(l + "\n")
			mu.Unlock()
			if strings.Contains(l, ReadyMarker) {
				close(ready)
			}
			if strings.HasPrefix(l, "node0|nvsmi|0, ") {
				if n++; n == 5 {
					close(samples)
				}
			}
		}
	}()
	for _, w := range []struct {
		what string
		ch   chan struct{}
	}{{"the ready marker", ready}, {"5 samples", samples}} {
		select {
		case <-w.ch:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("no %s in 20 s; the script printed:\n%s", w.what, log.String())
		}
	}
	assert.NilError(t, cmd.Process.Signal(syscall.SIGTERM))
	<-done
	err = cmd.Wait()
	assert.NilError(t, err, "the script's status after TERM; it printed:\n%s", log.String())
	for _, l := range strings.Fields(mustRead(t, pids)) {
		pid, err := strconv.Atoi(l)
		assert.NilError(t, err)
		gone := false
		for i := 0; i < 50 && !gone; i++ {
			gone = !alive(pid)
			time.Sleep(20 * time.Millisecond)
		}
		assert.Assert(t, gone, "nvidia-smi (pid %d) still runs after the script ended", pid)
	}
	left, err := os.ReadDir(tmp)
	assert.NilError(t, err)
	assert.Equal(t, len(left), 0, "the script left its FIFO folder behind")

	text := log.String()
	tel, sampler, err := ReadLog(strings.NewReader(text))
	assert.NilError(t, err)
	assert.Assert(t, sampler)
	assert.Equal(t, len(tel.GPUs), 1, "%+v\n%s", tel, text)
	g := tel.GPUs[0]
	assert.Equal(t, g.Host, "node0")
	assert.Equal(t, g.GPU, "0")
	assert.Equal(t, g.Tool, "nvidia-smi")
	assert.Assert(t, g.Samples >= 5)
	assert.Assert(t, g.First > 0 && g.Last >= g.First)
	assert.DeepEqual(t, g.Slowdown, map[string]int(nil)) // 0x1, idle
	assert.Equal(t, len(g.NewErrors), 1, "%v", g.NewErrors)
	assert.Assert(t, strings.Contains(g.NewErrors[0], "Xid (PCI:0000:00:06): 79"), g.NewErrors[0])
	for _, n := range tel.Notes {
		assert.Assert(t, !strings.Contains(n, "could not be read") && !strings.Contains(n, "end line"), n)
	}

	// The plugin's Parse of the same log, as the runner hands it over.
	f := filepath.Join(t.TempDir(), "monitor.0.log")
	assert.NilError(t, os.WriteFile(f, []byte(text), 0o600))
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: TestName, Outputs: []plan.Output{{Step: "monitor.0", Role: plan.Monitor, Log: f}}})
	assert.NilError(t, err)
	assert.Equal(t, p.Error, "")
	rest, got, err := result.StripTelemetry(p)
	assert.NilError(t, err)
	assert.Equal(t, len(rest.Info), 0)
	assert.Equal(t, got.GPUs[0].Samples, g.Samples)
	raw, _ := json.Marshal(got)
	assert.Assert(t, !strings.Contains(string(raw), "NaN"))
}

// Without any sampler the script says so, still prints its ready marker
// (the test's steps must not wait for it in vain) and waits for TERM.
func TestSampleScriptNoTool(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"sh", "sed", "tr", "date", "mktemp", "mkfifo", "rm", "sleep", "grep", "head", "tail", "hostname", "cat", "fold"} {
		if p, err := exec.LookPath(tool); err == nil {
			assert.NilError(t, os.Symlink(p, filepath.Join(bin, tool)))
		}
	}
	cmd := exec.Command("/bin/sh", "-c", Script, "gpuaccept-telemetry", "100", "0")
	cmd.Env = []string{"PATH=" + bin, "GPUACCEPT_NODE_NAME=node1", "TMPDIR=" + t.TempDir()}
	out, err := cmd.StdoutPipe()
	assert.NilError(t, err)
	assert.NilError(t, cmd.Start())
	var log strings.Builder
	br := bufio.NewReader(out)
	deadline := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for !strings.Contains(log.String(), ReadyMarker) {
		l, err := br.ReadString('\n')
		log.WriteString(l)
		if err != nil {
			t.Fatalf("no ready marker: %v; printed:\n%s", err, log.String())
		}
	}
	assert.NilError(t, cmd.Process.Signal(syscall.SIGTERM))
	rest, _ := io.ReadAll(br)
	log.Write(rest)
	assert.NilError(t, cmd.Wait())
	tel, sampler, err := ReadLog(strings.NewReader(log.String()))
	assert.NilError(t, err)
	assert.Assert(t, sampler)
	assert.Equal(t, len(tel.GPUs), 0)
	assert.DeepEqual(t, tel.Notes, []string{
		"node1: kernel log not read, new XIDs unknown: no dmesg on PATH",
		"node1: no nvidia-smi, dcgmi or amd-smi on PATH: nothing sampled",
	})
}
