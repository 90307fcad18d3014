package safefs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"gotest.tools/v3/assert"
)

// within runs f, failing the test when it does not return within 10 s (a
// FIFO opened for reading blocks until a writer comes).
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10 s", what)
		return nil
	}
}

// attack is a results folder with one planted file: name inside root
// replaced by what plant makes; victim is a file outside the folder that
// must keep its content.
type attack struct {
	name  string
	path  string // relative to root
	plant func(t *testing.T, root, p, victim, victimDir string)
	// what a refusal says (kind of file), "" when the operation succeeds.
	want string
}

const victimContent = "root:$6$secret:19000::\n"

func attacks() []attack {
	link := func(target func(victim, victimDir string) string) func(t *testing.T, root, p, victim, victimDir string) {
		return func(t *testing.T, root, p, victim, victimDir string) {
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, os.Symlink(target(victim, victimDir), p))
		}
	}
	return []attack{
		{"link to a file outside", layout.Results, link(func(v, _ string) string { return v }), "a symbolic link"},
		{"dangling link", layout.Results, link(func(_, d string) string { return filepath.Join(d, "new") }), "a symbolic link"},
		{"link to /dev/zero", "raw/t/step.log", link(func(string, string) string { return "/dev/zero" }), "a symbolic link"},
		{"link to a file inside", layout.Results, func(t *testing.T, root, p, _, _ string) {
			assert.NilError(t, os.WriteFile(filepath.Join(root, layout.Journal), []byte(victimContent), 0o644))
			assert.NilError(t, os.Symlink(layout.Journal, p))
		}, "a symbolic link"},
		{"FIFO", "raw/t/step.log", func(t *testing.T, root, p, _, _ string) {
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, syscall.Mkfifo(p, 0o644))
		}, "a named pipe (FIFO)"},
		{"folder raw is a link out", "raw/t/step.log", func(t *testing.T, root, p, _, victimDir string) {
			assert.NilError(t, os.Symlink(victimDir, filepath.Join(root, layout.Raw)))
		}, "raw is a symbolic link"},
		{"folder is a link to a folder inside", "raw/t/step.log", func(t *testing.T, root, p, _, _ string) {
			assert.NilError(t, os.MkdirAll(filepath.Join(root, layout.Baseline), 0o755))
			assert.NilError(t, os.Symlink(layout.Baseline, filepath.Join(root, layout.Raw)))
		}, "raw is a symbolic link"},
		{"socket", "raw/t/step.log", func(t *testing.T, root, p, _, _ string) {
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			assert.NilError(t, err)
			t.Cleanup(func() { syscall.Close(fd) })
			assert.NilError(t, syscall.Bind(fd, &syscall.SockaddrUnix{Name: p}))
		}, "a socket"},
		{"folder where a file goes", layout.Results, func(t *testing.T, root, p, _, _ string) {
			assert.NilError(t, os.MkdirAll(p, 0o755))
		}, "a folder"},
		{"dot-dot out", "../shadow", func(*testing.T, string, string, string, string) {}, "outside the folder"},
		{"absolute", "/etc/passwd", func(*testing.T, string, string, string, string) {}, "outside the folder"},
	}
}

// setup makes a results folder and a victim beside it, in a folder of
// its own that a link may point at.
func setup(t *testing.T, a attack) (root, victim, victimDir string) {
	base := t.TempDir()
	root = filepath.Join(base, "results")
	assert.NilError(t, os.MkdirAll(root, 0o755))
	victimDir = filepath.Join(base, "elsewhere")
	assert.NilError(t, os.MkdirAll(victimDir, 0o755))
	victim = filepath.Join(base, "shadow")
	assert.NilError(t, os.WriteFile(victim, []byte(victimContent), 0o600))
	p := filepath.Join(root, a.path)
	if filepath.IsAbs(a.path) {
		p = a.path
	}
	a.plant(t, root, p, victim, victimDir)
	return root, victim, victimDir
}

// Every way of writing refuses every attack by name and changes nothing
// outside the folder: not the victim, not the folder a link points at.
func TestWritesRefuseAttacks(t *testing.T) {
	writes := map[string]func(root, name string) error{
		"WriteFile": func(root, name string) error { return WriteFile(root, name, []byte("report\n"), 0o644) },
		"Create": func(root, name string) error {
			f, err := Create(root, name, 0o644)
			if err == nil {
				_, err = f.WriteString("log\n")
				f.Close()
			}
			return err
		},
		"CreateNew": func(root, name string) error {
			f, err := CreateNew(root, name, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		},
		"OpenAppend": func(root, name string) error {
			f, err := OpenAppend(root, name)
			if err == nil {
				_, err = f.WriteString("appended\n")
				f.Close()
			}
			return err
		},
	}
	for wname, write := range writes {
		for _, a := range attacks() {
			t.Run(wname+"/"+a.name, func(t *testing.T) {
				root, victim, victimDir := setup(t, a)
				err := within(t, wname, func() error { return write(root, a.path) })
				assert.Assert(t, errors.Is(err, ErrRefused), "%v", err)
				assert.ErrorContains(t, err, a.want)
				got, rerr := os.ReadFile(victim)
				assert.NilError(t, rerr)
				assert.Equal(t, string(got), victimContent)
				ents, rerr := os.ReadDir(victimDir)
				assert.NilError(t, rerr)
				assert.Equal(t, len(ents), 0, "wrote into the folder a link points at")
				if in, err := os.ReadFile(filepath.Join(root, layout.Journal)); err == nil {
					assert.Equal(t, string(in), victimContent, "wrote through a link inside the folder")
				}
			})
		}
	}
}

// Reads refuse every attack by name without blocking.
func TestReadsRefuseAttacks(t *testing.T) {
	reads := map[string]func(root, name string) error{
		"Open":     func(root, name string) error { f, err := Open(root, name); closeIf(f); return err },
		"ReadFile": func(root, name string) error { _, err := ReadFile(root, name, 1<<20); return err },
		"Check":    Check,
		"DirFS": func(root, name string) error {
			if filepath.IsAbs(name) || strings.HasPrefix(name, "..") {
				_, err := ReadFile(root, name, 1<<20) // fs.FS refuses such names itself
				return err
			}
			_, err := fs.ReadFile(DirFS(root), name)
			return err
		},
	}
	for rname, read := range reads {
		for _, a := range attacks() {
			t.Run(rname+"/"+a.name, func(t *testing.T) {
				root, _, _ := setup(t, a)
				err := within(t, rname, func() error { return read(root, a.path) })
				assert.Assert(t, errors.Is(err, ErrRefused), "%v", err)
				assert.ErrorContains(t, err, a.want)
			})
		}
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// What is allowed still works: new files and folders, a regular file
// replaced, appended to, read back; WriteFile leaves no temporary file.
func TestPlainFilesWork(t *testing.T) {
	root := filepath.Join(t.TempDir(), "results")
	assert.NilError(t, MkdirAll(root, "raw/nccl.all_reduce"))
	assert.NilError(t, WriteFile(root, layout.Results, []byte("one\n"), 0o644))
	assert.NilError(t, WriteFile(root, layout.Results, []byte("two\n"), 0o644))
	f, err := Create(root, "raw/nccl.all_reduce/all_reduce.log", 0o644)
	assert.NilError(t, err)
	_, err = f.WriteString("line 1\n")
	assert.NilError(t, err)
	assert.NilError(t, f.Close())
	f, err = OpenAppend(root, "raw/nccl.all_reduce/all_reduce.log")
	assert.NilError(t, err)
	_, err = f.WriteString("line 2\n")
	assert.NilError(t, err)
	assert.NilError(t, f.Close())
	_, err = CreateNew(root, "raw/nccl.all_reduce/all_reduce.log", 0o644)
	assert.Assert(t, errors.Is(err, fs.ErrExist), "%v", err)
	_, err = Open(root, "missing.json")
	assert.Assert(t, errors.Is(err, fs.ErrNotExist), "%v", err)

	data, err := ReadFile(root, "raw/nccl.all_reduce/all_reduce.log", 1<<20)
	assert.NilError(t, err)
	assert.Equal(t, string(data), "line 1\nline 2\n")
	data, err = fs.ReadFile(DirFS(root), layout.Results)
	assert.NilError(t, err)
	assert.Equal(t, string(data), "two\n")
	ents, err := fs.ReadDir(DirFS(root), "raw/nccl.all_reduce")
	assert.NilError(t, err)
	assert.Equal(t, len(ents), 1)
	_, err = ReadFile(root, layout.Results, 3)
	assert.ErrorContains(t, err, "more than 3 bytes")

	assert.NilError(t, Rename(root, layout.Raw+"/nccl.all_reduce", layout.Raw+"/nccl.all_reduce"+layout.AttemptSep+"1"))
	assert.NilError(t, Check(root, layout.Raw+"/nccl.all_reduce"+layout.AttemptSep+"1/all_reduce.log"))
	top, err := os.ReadDir(root)
	assert.NilError(t, err)
	for _, e := range top {
		assert.Assert(t, !strings.HasSuffix(e.Name(), ".tmp"), "temporary file left: %s", e.Name())
	}

	// A file the user named, in a folder reached through a link they
	// made, is written: only links below the root are refused.
	real := t.TempDir()
	via := filepath.Join(t.TempDir(), "via")
	assert.NilError(t, os.Symlink(real, via))
	assert.NilError(t, WriteNamed(filepath.Join(via, layout.JUnit), []byte("<x/>"), 0o644))
	data, err = os.ReadFile(filepath.Join(real, layout.JUnit))
	assert.NilError(t, err)
	assert.Equal(t, string(data), "<x/>")
	data, err = ReadNamed(filepath.Join(via, layout.JUnit), 100)
	assert.NilError(t, err)
	assert.Equal(t, string(data), "<x/>")
}

// Files the user names: WriteNamed refuses a link at the name (one planted
// in /tmp), OpenNamed follows one to a regular file but refuses a FIFO or
// a device without blocking.
func TestNamedFiles(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "shadow")
	assert.NilError(t, os.WriteFile(victim, []byte(victimContent), 0o600))
	planted := filepath.Join(dir, layout.JUnit)
	assert.NilError(t, os.Symlink(victim, planted))
	err := WriteNamed(planted, []byte("<x/>"), 0o644)
	assert.Assert(t, errors.Is(err, ErrRefused), "%v", err)
	got, _ := os.ReadFile(victim)
	assert.Equal(t, string(got), victimContent)

	data, err := ReadNamed(planted, 1<<10)
	assert.NilError(t, err, "a link the user gave is theirs to give")
	assert.Equal(t, string(data), victimContent)
	fifo := filepath.Join(dir, "fifo.log")
	assert.NilError(t, syscall.Mkfifo(fifo, 0o644))
	for _, p := range []string{fifo, "/dev/zero"} {
		err := within(t, "ReadNamed "+p, func() error { _, err := ReadNamed(p, 1<<10); return err })
		assert.Assert(t, errors.Is(err, ErrRefused), "%v", err)
	}
	_, err = ReadNamed(victim, 3)
	assert.ErrorContains(t, err, "more than 3 bytes")
}

// A reader handed a file by Open reads all of it (O_NONBLOCK changes
// nothing for a regular file).
func TestOpenReadsWhole(t *testing.T) {
	root := t.TempDir()
	big := strings.Repeat("0123456789abcdef", 1<<16)
	assert.NilError(t, os.WriteFile(filepath.Join(root, "big.log"), []byte(big), 0o644))
	f, err := Open(root, "big.log")
	assert.NilError(t, err)
	defer f.Close()
	data, err := io.ReadAll(f)
	assert.NilError(t, err)
	assert.Equal(t, len(data), len(big))
}
