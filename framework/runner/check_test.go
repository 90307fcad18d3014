package runner

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

func TestGroupFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a/run.log", "a/run.json", "b/run.log", "r/all_reduce.log", "r/all_reduce.files/all_reduce.json", "c/other.txt"} {
		p := filepath.Join(dir, f)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
	in := func(f string) string { return filepath.Join(dir, f) }
	groups, err := groupFiles([]string{in("a/run.log"), in("a/run.json"), in("b/run.log"), in("r/all_reduce.log"), in("c/other.txt")})
	assert.NilError(t, err)
	assert.Equal(t, len(groups), 4)
	// run.log + run.json side by side are one run.
	assert.Equal(t, groups[0].out.Log, in("a/run.log"))
	assert.DeepEqual(t, groups[0].out.Files, map[string]string{"run.json": in("a/run.json")})
	// Same name in another folder: labelled by path.
	assert.Equal(t, groups[0].label, in("a/run.log"))
	assert.Equal(t, groups[1].label, in("b/run.log"))
	// A results folder's log finds its -J file in STEP.files/.
	assert.DeepEqual(t, groups[2].out.Files, map[string]string{"all_reduce.json": in("r/all_reduce.files/all_reduce.json")})
	assert.Equal(t, groups[3].label, "other.txt")

	_, err = groupFiles([]string{in("missing.log")})
	assert.ErrorContains(t, err, "missing.log: no such file")
}
