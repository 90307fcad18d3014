package pluginapi

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// fake is a plugin whose Parse behaves as the GPUACCEPT_TEST_PLUGIN
// variable says: "ok" echoes, "crash" panics, "hang" never answers.
type fake struct{ mode string }

func (f fake) Describe(context.Context) (Description, error) {
	name := "fake"
	if f.mode == "impostor" {
		name = "other"
	}
	return Description{Name: name, Version: "1", Tests: []TestInfo{{Name: "t", Params: []Param{{Name: "p", Default: "1", Unit: "bytes"}},
		Metrics: []MetricInfo{{Name: "busbw", Unit: "GB/s"}}}}}, nil
}

func (f fake) Plan(_ context.Context, req PlanRequest) (plan.Plan, error) {
	role := ""
	if f.mode == "role" {
		role = "server" // a role the test does not declare
	}
	return plan.Plan{Steps: []plan.Step{{Name: req.Test, Role: role, Argv: []string{"echo", req.Params["p"]}, Procs: req.Topology.Ranks(), ProcsPerNode: req.Topology.GPUsPerNode,
		MPI: true, Env: map[string]string{"A": "b"}, Timeout: 90 * time.Second, Files: []string{"x.json"}, ReadyMarker: "ready"}}}, nil
}

func (f fake) Parse(_ context.Context, req ParseRequest) (result.Parsed, error) {
	switch f.mode {
	case "crash":
		var m map[string]int
		//lint:ignore SA5000 the plugin under test crashes on purpose, as a parser bug on hostile output would
		m["boom"]++
	case "hang":
		select {}
	}
	return result.Parsed{Metrics: []result.Metric{{Name: "busbw", Value: 1.5, Unit: "GB/s", Size: 8, Labels: map[string]string{"placement": "in-place"},
		Cycles: 20, Min: 1.5, Median: 1.75, Max: 2.25}},
		Checks: []result.Check{{Name: "rank count", OK: true}, {Name: "independent runs", OK: true, Message: "m", Warn: true, Error: true, Host: "node1", Code: "GA-X"}}, Diagnostics: []result.Diagnostic{{Level: result.Warning, Message: req.Outputs[0].Log, Source: "x:1"}},
		Info: map[string]string{"exit": req.Outputs[0].Files["x.json"]}}, nil
}

func TestMain(m *testing.M) {
	if mode := os.Getenv("GPUACCEPT_TEST_PLUGIN"); mode != "" {
		Serve(fake{mode: mode})
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// host serves the fake plugin by re-executing this test binary, the way
// gpuaccept re-executes itself for built-in plugins.
func host(t *testing.T, mode string) *Host {
	h := &Host{Builtin: []string{"fake"}, CallTimeout: 3 * time.Second, SelfCommand: func(string) (*exec.Cmd, error) {
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), "GPUACCEPT_TEST_PLUGIN="+mode)
		return c, nil
	}}
	t.Cleanup(h.Close)
	return h
}

var req = ParseRequest{Test: "t", Outputs: []plan.Output{{Step: "t", Log: "/tmp/t.log", Files: map[string]string{"x.json": "/tmp/x.json"}}}}

func TestRoundTrip(t *testing.T) {
	h := host(t, "ok")
	ctx := context.Background()
	d, err := h.Describe(ctx, "fake")
	assert.NilError(t, err)
	assert.Equal(t, d.Tests[0].Params[0].Unit, "bytes")
	p, err := h.Plan(ctx, "fake", PlanRequest{Test: "t", Params: map[string]string{"p": "4G"}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}})
	assert.NilError(t, err)
	assert.DeepEqual(t, p.Steps[0], plan.Step{Name: "t", Argv: []string{"echo", "4G"}, Procs: 16, ProcsPerNode: 8, MPI: true,
		Env: map[string]string{"A": "b"}, Timeout: 90 * time.Second, Files: []string{"x.json"}, ReadyMarker: "ready"})
	got, err := h.Parse(ctx, "fake", req)
	assert.NilError(t, err)
	assert.DeepEqual(t, got, result.Parsed{Metrics: []result.Metric{{Name: "busbw", Value: 1.5, Unit: "GB/s", Size: 8, Labels: map[string]string{"placement": "in-place"},
		Cycles: 20, Min: 1.5, Median: 1.75, Max: 2.25}},
		Checks: []result.Check{{Name: "rank count", OK: true}, {Name: "independent runs", OK: true, Message: "m", Warn: true, Error: true, Host: "node1", Code: "GA-X"}}, Diagnostics: []result.Diagnostic{{Level: result.Warning, Message: "/tmp/t.log", Source: "x:1"}},
		Info: map[string]string{"exit": "/tmp/x.json"}})
	// Every field of the metric is set, so a field the Go<->proto mapping
	// forgets fails here.
	for _, v := range []reflect.Value{reflect.ValueOf(got.Metrics[0]), reflect.ValueOf(got.Checks[1])} {
		for i := 0; i < v.NumField(); i++ {
			assert.Assert(t, !v.Field(i).IsZero(), "%s.%s lost in the round trip", v.Type(), v.Type().Field(i).Name)
		}
	}
}

// A plugin that panics costs the call an error naming the panic; the next
// call gets a fresh plugin process.
func TestCrashIsAnErrorAndRestarts(t *testing.T) {
	h := host(t, "crash")
	ctx := context.Background()
	_, err := h.Parse(ctx, "fake", req)
	assert.ErrorContains(t, err, "plugin fake: parse t: plugin process died")
	assert.ErrorContains(t, err, "assignment to entry in nil map")
	d, err := h.Describe(ctx, "fake")
	assert.NilError(t, err, "a fresh process serves the next call")
	assert.Equal(t, d.Name, "fake")
}

func TestHangIsKilled(t *testing.T) {
	h := host(t, "hang")
	h.CallTimeout = 500 * time.Millisecond
	start := time.Now()
	_, err := h.Parse(context.Background(), "fake", req)
	assert.ErrorContains(t, err, "no answer within 500ms; plugin killed")
	assert.Assert(t, time.Since(start) < 10*time.Second)
}

func TestUnknownPlugin(t *testing.T) {
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(dir+"/"+ExternalPrefix+"other", []byte("#!/bin/sh\n"), 0o755))
	h := &Host{Builtin: []string{"nccl"}, Path: []string{dir}}
	assert.DeepEqual(t, h.Names(), []string{"nccl", "other"})
	_, err := h.Describe(context.Background(), "rccl")
	assert.ErrorContains(t, err, `no plugin "rccl" (known: nccl, other;`)
}

// An external plugin is any executable named gpuaccept-plugin-NAME on the
// plugin path; here a shell script that execs this test binary as a plugin.
func TestExternalPlugin(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nGPUACCEPT_TEST_PLUGIN=ok exec " + os.Args[0] + "\n"
	assert.NilError(t, os.WriteFile(dir+"/"+ExternalPrefix+"fake", []byte(script), 0o755))
	h := &Host{Path: []string{dir}}
	t.Cleanup(h.Close)
	d, err := h.Describe(context.Background(), "fake")
	assert.NilError(t, err)
	assert.Equal(t, d.Name, "fake")
	assert.Assert(t, !strings.Contains(strings.Join(h.Names(), ","), "gpuaccept-plugin"))
}

// The host holds a plugin to its contract: a description of another
// plugin, or a step with a role the test does not declare, is an error.
func TestHostChecksTheContract(t *testing.T) {
	ctx := context.Background()
	_, err := host(t, "impostor").Describe(ctx, "fake")
	assert.ErrorContains(t, err, `plugin fake: describe: describes itself as "other", not "fake"`)
	_, err = host(t, "role").Plan(ctx, "fake", PlanRequest{Test: "t", Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}}})
	assert.ErrorContains(t, err, `plugin fake: plan t: step "t": role "server", but the test declares no roles`)
}

// A command's host serves the built-in plugins and looks for external
// ones on every folder of --plugin-path, empty parts skipped.
func TestNewHost(t *testing.T) {
	for _, c := range []struct {
		path string
		want []string
	}{
		{"", nil},
		{"/opt/a:/opt/b", []string{"/opt/a", "/opt/b"}},
		{"::/opt/a:", []string{"/opt/a"}},
	} {
		h := NewHost(c.path)
		assert.DeepEqual(t, h.Path, c.want)
		assert.DeepEqual(t, h.Builtin, Builtins())
	}
}
