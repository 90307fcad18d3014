package acceptance

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/hosts"
	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// prepareFor is a Prepare of cmd on the built-in h200 SKU through the
// replaying launcher (failing with launchErr when set), writing under a
// temporary folder.
func prepareFor(t *testing.T, cmd Command, suite string, launchErr error) (Prepare, *bytes.Buffer) {
	cat, err := sku.LoadBuiltIn(baselines.FS)
	assert.NilError(t, err)
	var stderr bytes.Buffer
	launchers := func(s *sku.SKU, dryRun bool) NewLauncher {
		return func([]string) (launch.Launcher, error) {
			if launchErr != nil {
				return nil, launchErr
			}
			return replaying{log: healthyLog}, nil
		}
	}
	return Prepare{Request: Request{Command: cmd, Suite: suite, Launcher: "replaying"}, Catalog: cat, SKUName: "h200",
		Localise: LocaliseRequest{Strategy: localise.Auto, Tolerance: localise.DefaultTolerance, Matchings: localise.DefaultMatchings},
		Out:      filepath.Join(t.TempDir(), "out"), Timeout: time.Minute, Plugins: h200Plugins, Launchers: launchers,
		AutoNote: []string{"auto picked h200"}, Version: "test", Stdout: &bytes.Buffer{}, Stderr: &stderr,
		Now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}, &stderr
}

// run, localise and health resolve a command line into one Setup by the
// same rules, each refusing what it always refused.
func TestPrepareSetup(t *testing.T) {
	ctx := context.Background()
	file, err := baselines.FS.ReadFile("h200.yaml")
	assert.NilError(t, err)

	p, _ := prepareFor(t, CommandRun, "singlenode", nil)
	ready, err := p.Setup(ctx)
	assert.NilError(t, err)
	defer ready.Cleanup()
	st := ready.Setup
	assert.Equal(t, st.SKU.Name, "h200")
	assert.Equal(t, st.Suite, "singlenode")
	assert.Equal(t, st.Dir, p.Out)
	assert.Equal(t, st.Topology.Nodes, 1)
	assert.Equal(t, st.Topology.GPUsPerNode, st.SKU.GPUsPerNode)
	assert.DeepEqual(t, st.Baseline, file)
	assert.Equal(t, st.Notes[0], "auto picked h200")
	assert.Assert(t, ready.Launcher != nil && !ready.Scratch)

	// A folder a run would refuse: the run stops, the dry run names it
	// and says so.
	p, stderr := prepareFor(t, CommandRun, "singlenode", nil)
	assert.NilError(t, os.MkdirAll(p.Out, 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(p.Out, "x"), nil, 0o644))
	_, err = p.Setup(ctx)
	assert.ErrorContains(t, err, p.Out)
	p.DryRun = true
	ready, err = p.Setup(ctx)
	assert.NilError(t, err)
	assert.Equal(t, ready.Setup.Dir, p.Out)
	assert.Assert(t, ready.Setup.Notes == nil, "a dry run records nothing")
	assert.Assert(t, strings.Contains(stderr.String(), ": the run itself would stop here\n"), stderr.String())

	// Health picks the suite by its preflight tests; --slurm-check
	// without --out gets a scratch folder its Cleanup removes, and no
	// progress.
	p, _ = prepareFor(t, CommandHealth, "node", nil)
	p.SlurmCheck, p.Out = true, ""
	ready, err = p.Setup(ctx)
	assert.NilError(t, err)
	assert.Assert(t, ready.Scratch)
	assert.Equal(t, ready.Setup.Topology.Nodes, 1)
	assert.Assert(t, strings.HasPrefix(filepath.Base(filepath.Dir(ready.Setup.Dir)), "gpuaccept-health-"), ready.Setup.Dir)
	ready.Cleanup()
	_, err = os.Stat(filepath.Dir(ready.Setup.Dir))
	assert.Assert(t, errors.Is(err, os.ErrNotExist), "the scratch folder is removed")

	cases := []struct {
		name  string
		cmd   Command
		suite string
		edit  func(*Prepare)
		lerr  error
		want  string
	}{
		{"unknown SKU", CommandRun, "singlenode", func(p *Prepare) { p.SKUName = "h999" }, nil, "h999"},
		{"unknown suite", CommandRun, "nosuite", nil, nil, `SKU h200 has no suite "nosuite"`},
		{"health of a suite without preflight", CommandHealth, "singlenode", nil, nil, "suite singlenode of SKU h200 has no preflight test"},
		{"localise flags that contradict", CommandRun, "singlenode", func(p *Prepare) { p.Localise.Always, p.Localise.Never = true, true }, nil,
			"--localise and --no-localise contradict each other"},
		{"a launcher that cannot run there", CommandRun, "singlenode", nil, errors.New("no hosts"), "no hosts"},
		{"a launcher that cannot localise", CommandLocalise, "singlenode", func(p *Prepare) {
			p.Hosts = []hosts.Host{{Name: "n1"}, {Name: "n2"}}
		}, errors.New("no hosts"),
			"launcher replaying cannot run a test on the nodes given, so it cannot localise: no hosts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _ := prepareFor(t, c.cmd, c.suite, c.lerr)
			if c.edit != nil {
				c.edit(&p)
			}
			ready, err := p.Setup(ctx)
			assert.ErrorContains(t, err, c.want)
			assert.Assert(t, ready.Cleanup != nil)
		})
	}
}

// The local launcher's steps held less than fully are said once and
// noted; another launcher's steps are not this host's to say.
func TestContainmentNotes(t *testing.T) {
	var b bytes.Buffer
	assert.Assert(t, ContainmentNotes(false, &b) == nil)
	assert.Equal(t, b.Len(), 0)
	notes := ContainmentNotes(true, &b)
	if len(notes) == 0 {
		assert.Equal(t, b.Len(), 0, "held fully: nothing said")
		return
	}
	assert.Equal(t, b.String(), "warning: "+notes[0]+"\n")
}
