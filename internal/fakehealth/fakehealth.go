// Package fakehealth is a test double of a preflight plugin
// (pluginapi.TestInfo.Preflight), for the tests of the suite run's
// pre-flight, verify's rules for its skips and the health command, while
// the real health plugin is written elsewhere. It parses no tool's output:
// its step prints the lines its "report" parameter gives, and its parser
// reads them back, so nothing real is stood in for.
//
// report is a comma-separated list of HOST=ok or HOST=CODE:MESSAGE; the
// host "local" stands for this machine's host name (os.Hostname), as a
// health check run on the node itself names it.
package fakehealth

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// PluginName is the plugin's name; its one test is "fakehealth.node".
const PluginName = "fakehealth"

// Plugin is the fake preflight plugin.
type Plugin struct{}

// Describe declares the one test, a preflight test.
func (Plugin) Describe(context.Context) (pluginapi.Description, error) {
	return pluginapi.Description{Name: PluginName, Version: "test", Tests: []pluginapi.TestInfo{{
		Name: "node", Description: "a stand-in health check: prints its report parameter", Preflight: true,
		Params: []pluginapi.Param{{Name: "report", Description: "HOST=ok or HOST=CODE:MESSAGE, comma-separated"}},
	}}}, nil
}

// Plan makes one step that prints the report, one line per host:
// "HOST ok" or "HOST CODE MESSAGE".
func (Plugin) Plan(_ context.Context, req pluginapi.PlanRequest) (plan.Plan, error) {
	if req.Test != "node" {
		return plan.Plan{}, fmt.Errorf("fakehealth has no test %q", req.Test)
	}
	argv := []string{"sh", "-c", `printf '%s\n' "$@"`, "fakehealth"}
	for _, e := range strings.Split(req.Params["report"], ",") {
		if e == "" {
			continue
		}
		host, what, ok := strings.Cut(e, "=")
		if !ok {
			return plan.Plan{}, fmt.Errorf("param report: %q is not HOST=ok or HOST=CODE:MESSAGE", e)
		}
		if host == "local" {
			h, err := os.Hostname()
			if err != nil {
				return plan.Plan{}, fmt.Errorf("param report: host name: %w", err)
			}
			host = h
		}
		argv = append(argv, host+" "+strings.Replace(what, ":", " ", 1))
	}
	return plan.Plan{Steps: []plan.Step{{Name: "node", Argv: argv, Procs: 1, ProcsPerNode: 1}}}, nil
}

// Report is what the step of p prints: its argv's lines, for launchers of
// tests that run nothing.
func Report(p plan.Plan) string {
	var b strings.Builder
	for _, st := range p.Steps {
		if len(st.Argv) > 4 {
			for _, l := range st.Argv[4:] {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}

// Parse reads the report back: one check per line, failed with its code
// and message unless it says ok.
func (Plugin) Parse(_ context.Context, req pluginapi.ParseRequest) (result.Parsed, error) {
	var p result.Parsed
	for _, o := range req.Outputs {
		f, err := os.Open(o.Log)
		if err != nil {
			p.Error = fmt.Sprintf("read %s: %v", o.Log, err)
			return p, nil
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			host, rest, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
			if host == "" {
				continue
			}
			c := result.Check{Name: "node health", OK: rest == "ok", Host: host}
			if !c.OK {
				c.Code, c.Message, _ = strings.Cut(rest, " ")
			}
			p.Checks = append(p.Checks, c)
		}
		f.Close()
	}
	if len(p.Checks) == 0 {
		p.Error = "no health lines in the output"
	}
	return p, nil
}
