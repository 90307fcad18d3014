package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// h100Node is the health output of the real H100 of issue 28 (collect.sh,
// host vm): nvidia-smi -q -x prints its serial and UUID.
const h100Node = "../../testdata/recordings/h100x1-2026-12-07/issue28/node-1/raw/health.node/node.log"

// h100Serial and h100UUID are what that output prints of the GPU.
const (
	h100Serial = "1651724062853"
	h100UUID   = "GPU-2137ad31-944e-c25c-407c-a7fb0549d297"
)

// hardwareFolder signs off the check of the H100's health output: the
// folder lists the GPU its raw output shows (hardware.json).
func hardwareFolder(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "results")
	code, stdout, errs := cli(t, "check", "--sku", "h100", "--test", "health.node", "--nodes", "1", "--gpus-per-node", "1", "--out", out, h100Node)
	assert.Equal(t, code, 0, stdout+errs)
	return out
}

// resignAsIs makes the manifest of a forged folder again without
// rendering anything (gpuaccept report would make hardware.json again
// from the raw outputs): the forger's own manifest.Write.
func resignAsIs(t *testing.T, dir string) []string {
	t.Helper()
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
	_, err := manifest.Write(dir, "dev", "h100")
	assert.NilError(t, err)
	return []string{"--digest", digestOf(t, dir)}
}

// Issue 29: the evidence is bound to the hardware it came from. The
// sign-off lists the GPUs the raw outputs show (UUID, serial, bus id, by
// host); verify prints the list re-derived and the reports show it, and a
// list that says more or other than the raw outputs is a finding.
func TestVerifyHardwareList(t *testing.T) {
	dir := hardwareFolder(t)
	devices, ok, err := resultsdir.ReadHardware(dir)
	assert.NilError(t, err)
	assert.Assert(t, ok)
	assert.DeepEqual(t, devices, []result.Device{{Host: "vm", Kind: "gpu", Name: "NVIDIA H100 80GB HBM3", UUID: h100UUID, Serial: h100Serial,
		BusID: "00000000:00:06.0", Tests: []string{"health.node"}}})
	for _, f := range []string{layout.Markdown, layout.HTML} {
		data := readFile(t, filepath.Join(dir, f))
		assert.Assert(t, strings.Contains(data, "Hardware") && strings.Contains(data, h100Serial) && strings.Contains(data, h100UUID), "%s:\n%s", f, data)
	}
	code, out, _ := cli(t, "verify", dir)
	assert.Equal(t, code, 0, out)
	assert.Assert(t, strings.Contains(out, `vm gpu "NVIDIA H100 80GB HBM3" uuid `+h100UUID+` serial `+h100Serial+` bus 00000000:00:06.0`), out)

	for _, c := range []struct {
		name   string
		change func(dir string)
		want   []string
	}{
		{"serial of another GPU", func(dir string) {
			edit(t, filepath.Join(dir, layout.Hardware), h100Serial, "1654024199393")
		}, []string{`MISMATCH hardware.json lists vm gpu "NVIDIA H100 80GB HBM3" uuid ` + h100UUID + ` serial 1654024199393`,
			`MISMATCH the raw outputs show vm gpu "NVIDIA H100 80GB HBM3" uuid ` + h100UUID + ` serial ` + h100Serial}},
		{"a node the raw outputs do not show added", func(dir string) {
			edit(t, filepath.Join(dir, layout.Hardware), `"devices": \[`, `"devices": [{"host":"node-2","kind":"gpu","serial":"1654024199393","tests":["health.node"]},`)
		}, []string{`MISMATCH hardware.json lists node-2 gpu serial 1654024199393 (seen by health.node), which the raw outputs, parsed again, do not show so`}},
		{"list deleted", func(dir string) {
			assert.NilError(t, os.Remove(filepath.Join(dir, layout.Hardware)))
		}, []string{"MISMATCH hardware.json: missing, but the journal is of a gpuaccept that lists the hardware"}},
		{"list not JSON", func(dir string) {
			assert.NilError(t, os.WriteFile(filepath.Join(dir, layout.Hardware), []byte("vm: all fine\n"), 0o644))
		}, []string{"MISMATCH read " + dir}},
	} {
		t.Run(c.name, func(t *testing.T) {
			forged := copyDir(t, dir)
			c.change(forged)
			digest := resignAsIs(t, forged)
			code, out, _ := cli(t, append([]string{"verify", forged}, digest...)...)
			assert.Equal(t, code, 1, out)
			for _, w := range c.want {
				w = strings.ReplaceAll(w, dir, forged)
				assert.Assert(t, strings.Contains(out, w), "want %q in\n%s", w, out)
			}
			// The reports show the list the folder has: rendered from
			// the forged list they differ, a finding of their own.
			onlyFindings(t, out, append(c.want, layout.Hardware, layout.Markdown, layout.HTML)...)
		})
	}

	// A folder made before gpuaccept listed hardware (the real H100 run
	// of issue 28) has no list: a note, no finding.
	_, out, _ = cli(t, "verify", "../../testdata/recordings/h100x1-2026-12-07/issue28/node-1")
	assert.Assert(t, strings.Contains(out, "NOTE no hardware list (hardware.json): made before gpuaccept listed hardware"), out)
	assert.Assert(t, !strings.Contains(out, "MISMATCH hardware"), out)
}
