package launch

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

const victimContent = "root:$6$secret:19000::\n"

// A step's log or collected file planted as a link (to a file outside, to
// /dev/null) or a FIFO, or the test's raw folder a link out: the launcher
// helpers refuse by name and leave the target as it was.
func TestRawOutputsNeverWrittenThroughALink(t *testing.T) {
	write := map[string]func(req Request) error{
		"CreateLog": func(req Request) error {
			w, _, err := CreateLog(req, "all_reduce")
			if err == nil {
				_, err = w.Write([]byte("# nccl-tests\n"))
				w.Close()
			}
			return err
		},
		"CollectFile": func(req Request) error {
			_, err := CollectFile(req, "all_reduce", "all_reduce.json", strings.NewReader("{}"))
			return err
		},
		"CreateRaw": func(req Request) error {
			f, _, err := CreateRaw(req, "job.sh")
			if err == nil {
				f.Close()
			}
			return err
		},
	}
	target := map[string]string{"CreateLog": "all_reduce.log", "CollectFile": "all_reduce.files/all_reduce.json", "CreateRaw": "job.sh"}
	cases := []struct {
		name  string
		plant func(t *testing.T, root, testDir, p, victim, victimDir string)
		want  string
	}{
		{"file a link out", func(t *testing.T, _, _, p, victim, _ string) {
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, os.Symlink(victim, p))
		}, "a symbolic link"},
		{"file a FIFO", func(t *testing.T, _, _, p, _, _ string) {
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, syscall.Mkfifo(p, 0o644))
		}, "a named pipe (FIFO)"},
		{"raw a link out", func(t *testing.T, root, _, _, _, victimDir string) {
			assert.NilError(t, os.Symlink(victimDir, filepath.Join(root, layout.Raw)))
		}, "raw is a symbolic link"},
		{"test folder a link out", func(t *testing.T, root, testDir, _, _, victimDir string) {
			assert.NilError(t, os.MkdirAll(filepath.Join(root, layout.Raw), 0o755))
			assert.NilError(t, os.Symlink(victimDir, testDir))
		}, "nccl.all_reduce is a symbolic link"},
	}
	for wname, w := range write {
		for _, c := range cases {
			t.Run(wname+"/"+c.name, func(t *testing.T) {
				base := t.TempDir()
				root := filepath.Join(base, "results")
				victimDir := filepath.Join(base, "elsewhere")
				victim := filepath.Join(base, "shadow")
				assert.NilError(t, os.MkdirAll(root, 0o755))
				assert.NilError(t, os.MkdirAll(victimDir, 0o755))
				assert.NilError(t, os.WriteFile(victim, []byte(victimContent), 0o600))
				testDir := filepath.Join(root, layout.Raw, "nccl.all_reduce")
				c.plant(t, root, testDir, filepath.Join(testDir, target[wname]), victim, victimDir)
				err := w(Request{Test: "nccl.all_reduce", Root: root, Dir: testDir})
				assert.Assert(t, errors.Is(err, safefs.ErrRefused), "%v", err)
				assert.ErrorContains(t, err, c.want)
				got, _ := os.ReadFile(victim)
				assert.Equal(t, string(got), victimContent)
				ents, _ := os.ReadDir(victimDir)
				assert.Equal(t, len(ents), 0, "wrote into the folder a link points at")
			})
		}
	}
}
