package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/proc"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// ExternalPrefix is the file-name prefix of external plugin executables:
// gpuaccept-plugin-NAME provides the tests NAME.*.
const ExternalPrefix = "gpuaccept-plugin-"

// DefaultCallTimeout bounds a plugin call when Host.CallTimeout is zero (as
// gpuaccept runs it): a plugin hung on hostile output costs its test this
// long, not the run.
const DefaultCallTimeout = 2 * time.Minute

// StartTimeout bounds a plugin's start: from the exec to its handshake
// line on stdout.
const StartTimeout = 30 * time.Second

// Host starts plugin processes on first use and keeps them for the run. A
// plugin that crashes or exceeds CallTimeout costs the call an error and is
// restarted for the next call; the run goes on.
type Host struct {
	// Builtin lists the plugins compiled into gpuaccept.
	Builtin []string
	// SelfCommand returns the command that serves a built-in plugin; nil
	// means re-executing this program as "PROGRAM plugin serve NAME".
	SelfCommand func(name string) (*exec.Cmd, error)
	// Path lists folders searched for gpuaccept-plugin-NAME executables.
	Path []string
	// CallTimeout bounds each Describe, Plan and Parse call (a plugin that
	// hangs on hostile output); zero means DefaultCallTimeout. A plugin
	// that does not answer in time is killed and the call is an error.
	CallTimeout time.Duration

	mu      sync.Mutex
	clients map[string]*running
}

type running struct {
	client *goplugin.Client
	impl   Plugin
	stderr *tail
}

// Names lists the built-in plugins and the external ones found on Path,
// sorted. A built-in name shadows an external executable of the same name.
func (h *Host) Names() []string {
	seen := map[string]bool{}
	for _, n := range h.Builtin {
		seen[n] = true
	}
	for _, dir := range h.Path {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if n, ok := strings.CutPrefix(e.Name(), ExternalPrefix); ok && n != "" && !e.IsDir() {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (h *Host) command(name string) (*exec.Cmd, error) {
	for _, b := range h.Builtin {
		if b == name {
			if h.SelfCommand != nil {
				return h.SelfCommand(name)
			}
			self, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("find own executable to serve plugin %s: %w", name, err)
			}
			return exec.Command(self, "plugin", "serve", name), nil
		}
	}
	for _, dir := range h.Path {
		p := filepath.Join(dir, ExternalPrefix+name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return exec.Command(p), nil
		}
	}
	return nil, fmt.Errorf("no plugin %q (known: %s; external plugins are executables named %sNAME on the plugin path %q)",
		name, strings.Join(h.Names(), ", "), ExternalPrefix, strings.Join(h.Path, string(os.PathListSeparator)))
}

func (h *Host) get(name string) (*running, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.clients[name]; ok && !r.client.Exited() {
		return r, nil
	}
	cmd, err := h.command(name)
	if err != nil {
		return nil, err
	}
	if tmp, err := proc.TempDir(); err == nil {
		// The plugin's socket goes in the run's temp folder, which goes
		// even when gpuaccept is killed (go-plugin removes it only when
		// its client stops the plugin).
		cmd.Env = append(cmd.Env, "PLUGIN_UNIX_SOCKET_DIR="+tmp)
	}
	stderr := &tail{max: 8 << 10}
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          goplugin.PluginSet{pluginKey: &grpcPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: stderr, Level: hclog.Debug, Name: "plugin." + name}),
		StartTimeout:     StartTimeout,
	})
	rpc, err := c.Client()
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("start plugin %s (%s): %w%s", name, strings.Join(cmd.Args, " "), err, stderr.suffix())
	}
	raw, err := rpc.Dispense(pluginKey)
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("connect to plugin %s: %w", name, err)
	}
	r := &running{client: c, impl: raw.(Plugin), stderr: stderr}
	if h.clients == nil {
		h.clients = map[string]*running{}
	}
	h.clients[name] = r
	return r, nil
}

// call runs f against the named plugin with the call timeout, and turns a
// crash or a hang into an error that says so; the broken process is killed
// so the next call starts a fresh one.
func (h *Host) call(ctx context.Context, name, what string, f func(context.Context, Plugin) error) error {
	r, err := h.get(name)
	if err != nil {
		return err
	}
	to := h.CallTimeout
	if to <= 0 {
		to = DefaultCallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	err = f(cctx, r.impl)
	if err == nil {
		return nil
	}
	switch {
	case ctx.Err() != nil:
		h.drop(name, r)
		return fmt.Errorf("plugin %s: %s: %w", name, what, ctx.Err())
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		h.drop(name, r)
		return fmt.Errorf("plugin %s: %s: no answer within %s; plugin killed", name, what, to)
	}
	// Give go-plugin a moment to notice a dead process before judging.
	for i := 0; i < 20 && !r.client.Exited(); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if r.client.Exited() {
		h.drop(name, r)
		return fmt.Errorf("plugin %s: %s: plugin process died%s", name, what, r.stderr.suffix())
	}
	return fmt.Errorf("plugin %s: %s: %w", name, what, err)
}

func (h *Host) drop(name string, r *running) {
	r.client.Kill()
	h.mu.Lock()
	if h.clients[name] == r {
		delete(h.clients, name)
	}
	h.mu.Unlock()
}

// Describe asks the named plugin to describe itself, and checks the
// description (Description.Check): a plugin that breaks its contract is an
// error, not a description the framework half understands.
func (h *Host) Describe(ctx context.Context, name string) (Description, error) {
	var d Description
	err := h.call(ctx, name, "describe", func(c context.Context, p Plugin) (err error) {
		d, err = p.Describe(c)
		return err
	})
	if err != nil {
		return d, err
	}
	if err := d.Check(name); err != nil {
		return Description{}, fmt.Errorf("plugin %s: describe: %w", name, err)
	}
	return d, nil
}

// Plan asks the named plugin for a test's steps and checks their shape
// (plan.Plan.Validate) and, when a step has a role, that the test declares
// it and the step is named ROLE.N (CheckRoles).
func (h *Host) Plan(ctx context.Context, name string, req PlanRequest) (plan.Plan, error) {
	var p plan.Plan
	err := h.call(ctx, name, "plan "+req.Test, func(c context.Context, pl Plugin) (err error) {
		p, err = pl.Plan(c, req)
		return err
	})
	if err != nil {
		return p, err
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("plugin %s: plan %s: %w", name, req.Test, err)
	}
	if slices.ContainsFunc(p.Steps, func(s plan.Step) bool { return s.Role != "" }) {
		d, err := h.Describe(ctx, name)
		if err != nil {
			return p, err
		}
		ti, _ := d.Test(req.Test)
		if err := CheckRoles(p, ti.Roles); err != nil {
			return p, fmt.Errorf("plugin %s: plan %s: %w", name, req.Test, err)
		}
	}
	return p, nil
}

// Parse asks the named plugin to parse a test's outputs.
func (h *Host) Parse(ctx context.Context, name string, req ParseRequest) (result.Parsed, error) {
	var p result.Parsed
	err := h.call(ctx, name, "parse "+req.Test, func(c context.Context, pl Plugin) (err error) {
		p, err = pl.Parse(c, req)
		return err
	})
	if err == nil {
		err = CheckParsed(p)
	}
	return p, err
}

// faultCode is what a check's code may be: gpuaccept's codes
// (framework/faults) are GA-WORDS; a plugin's own keep their form, letters,
// digits and dashes, so a code cannot carry a line break or markup into
// the reports and the Kubernetes annotations it lands in.
var faultCode = regexp.MustCompile(`^[A-Z][A-Z0-9-]{0,63}$`)

// CheckParsed reports the first way a parse answer breaks the contract
// beyond what the framework repairs itself (CONTRACT.md section 7): a
// check's code that is not a fault code, a host that is not a node name
// (letters, digits, ".", "-", "_", ":", at most 253). The error names the
// check.
func CheckParsed(p result.Parsed) error {
	for _, c := range p.Checks {
		if c.Code != "" && !faultCode.MatchString(c.Code) {
			return fmt.Errorf("check %q: code %q is not a fault code (A-Z, 0-9 and -, 1 to 64 characters)", c.Name, c.Code)
		}
		if c.Host != "" && !hostName.MatchString(c.Host) {
			return fmt.Errorf("check %q: host %q is not a node name", c.Name, c.Host)
		}
	}
	return nil
}

var hostName = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,253}$`)

// Close ends every plugin process the host started.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for n, r := range h.clients {
		r.client.Kill()
		delete(h.clients, n)
	}
}

// tail keeps the last max bytes written to it: the plugin's stderr, for
// error messages after a crash.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// suffix renders the first panic or error line the plugin printed, for
// appending to an error message; empty when there is none.
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, line := range strings.Split(string(t.buf), "\n") {
		if i := strings.Index(line, "panic:"); i >= 0 {
			return ": " + strings.TrimSpace(line[i:])
		}
	}
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return ": " + last
	}
	return ""
}
