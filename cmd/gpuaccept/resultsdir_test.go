package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// A gpuaccept-results planted in the working directory as a symbolic link
// (or a file) is refused, not followed: root running gpuaccept would
// otherwise write its results wherever the link's owner points it.
func TestCheckDefaultResultsParentNoLink(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T)
		want  string
	}{
		{"link to a folder", func(t *testing.T) { assert.NilError(t, os.Symlink(t.TempDir(), "gpuaccept-results")) }, "symbolic link"},
		{"dangling link", func(t *testing.T) { assert.NilError(t, os.Symlink("/nonexistent/x", "gpuaccept-results")) }, "symbolic link"},
		{"file", func(t *testing.T) { assert.NilError(t, os.WriteFile("gpuaccept-results", nil, 0o644)) }, "not a folder"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			c.plant(t)
			_, err := resultsDir("", "h200-x")
			var ue usageError
			assert.Assert(t, errors.As(err, &ue), "%v", err)
			assert.Assert(t, strings.Contains(err.Error(), "gpuaccept-results") && strings.Contains(err.Error(), c.want), "%v", err)
		})
	}
	t.Run("a link inside it", func(t *testing.T) {
		t.Chdir(t.TempDir())
		assert.NilError(t, os.Mkdir("gpuaccept-results", 0o755))
		assert.NilError(t, os.Symlink("/nonexistent/x", filepath.Join("gpuaccept-results", "h200-x")))
		dir, err := resultsDir("", "h200-x")
		assert.NilError(t, err)
		assert.Equal(t, dir, filepath.Join("gpuaccept-results", "h200-x-2"), "a name taken by a link is taken")
	})
	t.Run("a real folder", func(t *testing.T) {
		t.Chdir(t.TempDir())
		dir, err := resultsDir("", "h200-x")
		assert.NilError(t, err)
		assert.Equal(t, dir, filepath.Join("gpuaccept-results", "h200-x"))
	})
}
