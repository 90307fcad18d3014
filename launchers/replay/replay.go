// Package replay is the launcher that runs nothing: it serves recorded
// outputs from a folder laid out like a results folder's raw/ (one folder per
// test, holding STEP.log, STEP.files/ and optionally outputs.json with exit
// codes). It lets the whole pipeline run without GPUs (gpuaccept demo) and
// old logs be judged again against a new baseline.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// Name is the --launcher value.
const Name = result.ReplayLauncher

func init() {
	launch.Register(Name, func() launch.Config { return &Config{} })
}

// Config is where the recordings are: the launcher's own flag, or a
// file system given in code.
type Config struct {
	// Dir is --replay-dir: a folder of recordings, or a results folder
	// (replayed from its raw/ subfolder).
	Dir string
	// FS, when set, is used instead of Dir (the demo's embedded
	// recordings), and Where names it in messages.
	FS    fs.FS
	Where string
}

// Bind implements launch.Config: --replay-dir.
func (c *Config) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&c.Dir, "replay-dir", c.Dir, "recordings (or an old results folder) to replay")
}

// Build implements launch.Config. Nothing of o matters: a recording
// replays as it was recorded.
func (c *Config) Build(o launch.Options) (launch.Launcher, error) {
	switch {
	case c.FS != nil:
		where := c.Where
		if where == "" {
			where = "embedded recordings"
		}
		return &Launcher{FS: c.FS, Where: where}, nil
	case c.Dir != "":
		dir := c.Dir
		// A results folder replays from its raw/ subfolder.
		if fi, err := os.Stat(path.Join(dir, layout.Raw)); err == nil && fi.IsDir() {
			dir = path.Join(dir, layout.Raw)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("launcher replay: --replay-dir %q: not a folder", c.Dir)
		}
		// No link is followed and no special file read below dir: a
		// recording cannot lead out of it, nor hang the run on a FIFO.
		return &Launcher{FS: safefs.DirFS(dir), Where: dir, Scope: recordedScope(dir)}, nil
	}
	return nil, errors.New("launcher replay needs --replay-dir (a folder of recordings or a results folder)")
}

// Launcher serves recordings from FS.
type Launcher struct {
	FS fs.FS
	// Where names FS in messages.
	Where string
	// Scope is the scope the recordings ran at, where the results folder
	// they come from says it (its results.json); zero: not known. A run
	// that asks another gets each step's LaunchError, an ERROR: a 1-GPU
	// recording judged at 8 GPUs per node would fail a GPU count the
	// hardware never had (a setup mistake read as a fault).
	Scope plan.Scope
}

// RecordedScope is Scope: where a run's scope is not given, the scope to
// replay at (--sku auto's probe asks it).
func (l *Launcher) RecordedScope() plan.Scope { return l.Scope }

// recordedScope is the scope results.json beside dir (dir being a
// results folder's raw/) records; zero when there is none or it does not
// read.
func recordedScope(dir string) plan.Scope {
	if path.Base(dir) != layout.Raw {
		return plan.Scope{}
	}
	parent := path.Dir(dir)
	data, err := safefs.ReadFile(parent, layout.Results, 64<<20)
	if err != nil {
		return plan.Scope{}
	}
	var r struct {
		Scope plan.Scope `json:"scope"`
	}
	if json.Unmarshal(data, &r) != nil {
		return plan.Scope{}
	}
	return r.Scope
}

// Name implements launch.Launcher.
func (l *Launcher) Name() string { return Name }

// Commands implements launch.Launcher: what would be replayed.
func (l *Launcher) Commands(req launch.Request) ([]string, error) {
	var out []string
	for _, s := range req.Plan.Steps {
		out = append(out, fmt.Sprintf("replay %s from %s", path.Join(req.Test, layout.StepLog(s.Name)), l.Where))
	}
	return out, nil
}

// Launch implements launch.Launcher: each step's recorded log and files are
// copied (through redaction) into req.Dir. A missing recording is that
// step's LaunchError.
func (l *Launcher) Launch(ctx context.Context, req launch.Request) ([]plan.Output, error) {
	recorded := map[string]plan.Output{}
	data, err := fs.ReadFile(l.FS, path.Join(req.Test, layout.Outputs))
	if errors.Is(err, safefs.ErrRefused) {
		return nil, fmt.Errorf("read %s in %s: %w", path.Join(req.Test, layout.Outputs), l.Where, err)
	}
	if err == nil {
		var outs []plan.Output
		if err := json.Unmarshal(data, &outs); err != nil {
			return nil, fmt.Errorf("read %s in %s: %w", path.Join(req.Test, layout.Outputs), l.Where, err)
		}
		for _, o := range outs {
			recorded[o.Step] = o
		}
	}
	var outs []plan.Output
	for _, s := range req.Plan.Steps {
		if err := ctx.Err(); err != nil {
			return outs, err
		}
		if !l.Scope.IsZero() && req.Topology.Scope != l.Scope {
			outs = append(outs, plan.Output{Step: s.Name, Role: s.Role, ExitCode: -1,
				LaunchError: fmt.Sprintf("the recordings in %s ran at scope %s (nodes x GPUs per node), this run asks %s: replay them at their own (--nodes %d --gpus-per-node %d, or --sku auto)", l.Where, l.Scope, req.Topology.Scope, l.Scope.Nodes, l.Scope.GPUsPerNode)})
			continue
		}
		outs = append(outs, l.replayStep(req, s, recorded[s.Name]))
	}
	return outs, nil
}

func (l *Launcher) replayStep(req launch.Request, s plan.Step, rec plan.Output) plan.Output {
	out := plan.Output{Step: s.Name, Role: s.Role, Host: rec.Host, ExitCode: rec.ExitCode, LaunchError: rec.LaunchError,
		Command: rec.Command}
	logPath := path.Join(req.Test, layout.StepLog(s.Name))
	src, err := l.FS.Open(logPath)
	if err != nil {
		out.ExitCode = -1
		out.LaunchError = fmt.Sprintf("no recording %s in %s", logPath, l.Where)
		if errors.Is(err, safefs.ErrRefused) {
			out.LaunchError = fmt.Sprintf("recording %s in %s refused: %v", logPath, l.Where, errors.Unwrap(err))
		}
		return out
	}
	w, p, err := launch.CreateLog(req, s.Name)
	if err != nil {
		src.Close()
		out.LaunchError = err.Error()
		return out
	}
	_, cerr := io.Copy(w, src)
	src.Close()
	if err := w.Close(); cerr == nil {
		cerr = err
	}
	if cerr != nil {
		out.LaunchError = fmt.Sprintf("copy recording %s: %v", logPath, cerr)
		return out
	}
	out.Log = p
	for _, f := range s.Files {
		fp := path.Join(req.Test, layout.StepFiles(s.Name), path.Base(f))
		r, err := l.FS.Open(fp)
		if errors.Is(err, safefs.ErrRefused) {
			out.LaunchError = strings.TrimPrefix(out.LaunchError+"; ", "; ") + fmt.Sprintf("recording %s in %s refused: %v", fp, l.Where, errors.Unwrap(err))
			continue
		}
		if err != nil {
			continue // not recorded: the plugin reports the missing file
		}
		dst, err := launch.CollectFile(req, s.Name, path.Base(f), r)
		r.Close()
		if err != nil {
			out.LaunchError = err.Error()
			continue
		}
		if out.Files == nil {
			out.Files = map[string]string{}
		}
		out.Files[f] = dst
	}
	return out
}
