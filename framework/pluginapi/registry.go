package pluginapi

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
)

// The plugins compiled into gpuaccept register here from their package's
// init, as the launchers do with launch.Register: main.go imports each
// for that alone (a blank import), and every list of built-in plugins
// (list plugins, the Host's Builtin, gpuaccept plugin serve NAME, the
// docs a test holds to it) is read from this registry.
var (
	builtinMu sync.Mutex
	builtin   = map[string]Plugin{}
)

// Register records a plugin compiled into gpuaccept under its name (the
// name it describes itself by, served as "gpuaccept plugin serve NAME").
// It is called from the plugin package's init function. An empty name, a
// nil plugin, or a name registered twice panics: two packages claiming
// one plugin name is a build mistake, not a choice to make at run time.
func Register(name string, p Plugin) {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	if name == "" || p == nil {
		panic(fmt.Sprintf("pluginapi.Register(%q): empty name or nil plugin", name))
	}
	if _, dup := builtin[name]; dup {
		panic(fmt.Sprintf("pluginapi.Register: plugin %q registered twice", name))
	}
	builtin[name] = p
}

// Unregister drops a registered plugin: for a test that serves a test
// double for a while (Register it, then Unregister in its cleanup).
func Unregister(name string) {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	delete(builtin, name)
}

// NewHost is the plugin host of a command: the built-in plugins, and the
// external ones found on pluginPath (folders, colon-separated as
// --plugin-path and GPUACCEPT_PLUGIN_PATH give them; empty parts
// skipped).
func NewHost(pluginPath string) *Host {
	var path []string
	for _, p := range filepath.SplitList(pluginPath) {
		if p != "" {
			path = append(path, p)
		}
	}
	return &Host{Builtin: Builtins(), Path: path}
}

// Builtins lists the registered plugins' names, sorted.
func Builtins() []string {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	out := make([]string, 0, len(builtin))
	for n := range builtin {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Builtin is the registered plugin name; ok is false when none is.
func Builtin(name string) (p Plugin, ok bool) {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	p, ok = builtin[name]
	return p, ok
}

// InProcess calls the built-in plugins in this process, without the
// host's plugin processes: what a test that re-judges real outputs
// needs of runner.Plugins and runner.Describer. An unknown name is an
// error naming it.
type InProcess struct{}

func (InProcess) plugin(name string) (Plugin, error) {
	p, ok := Builtin(name)
	if !ok {
		return nil, fmt.Errorf("no built-in plugin %s", name)
	}
	return p, nil
}

// Plan plans req with the built-in plugin name.
func (b InProcess) Plan(ctx context.Context, name string, req PlanRequest) (plan.Plan, error) {
	p, err := b.plugin(name)
	if err != nil {
		return plan.Plan{}, err
	}
	return p.Plan(ctx, req)
}

// Parse parses req with the built-in plugin name.
func (b InProcess) Parse(ctx context.Context, name string, req ParseRequest) (result.Parsed, error) {
	p, err := b.plugin(name)
	if err != nil {
		return result.Parsed{}, err
	}
	return p.Parse(ctx, req)
}

// Describe describes the built-in plugin name.
func (b InProcess) Describe(ctx context.Context, name string) (Description, error) {
	p, err := b.plugin(name)
	if err != nil {
		return Description{}, err
	}
	return p.Describe(ctx)
}
