// Package safefs reads and writes the files of a results folder without
// following a symbolic link and without opening a special file (FIFO,
// device, socket) below it. gpuaccept runs as root on login nodes and in
// pods, on folders a customer, a job or another user may have written to:
// a results.json replaced by a link to /etc/shadow must not be clobbered,
// and a FIFO in raw/ must not hang gpuaccept verify.
//
// Every function takes a root, the folder as the user named it (links in
// that path, the folder itself included, are followed: the user chose
// them), and a name inside it, a relative path with '/' or the OS
// separator and no "..". Each folder below the root is opened with os.Root
// (which refuses any escape from the root, races included), after an Lstat
// that refuses it by name when it is a link; the folder opened is checked
// to be the one Lstat saw, so a link swapped in between is refused too.
// The last component is never followed:
//   - WriteFile writes a temporary file (O_CREATE|O_EXCL, which never
//     follows a link) in the same folder and renames it over the name;
//   - Create, CreateNew and OpenAppend refuse a link or a special file at
//     the name and open it so that nothing but that very file is written;
//   - Open and ReadFile open regular files only, without blocking
//     (O_NONBLOCK: a FIFO swapped in after the Lstat is not waited on),
//     and ReadFile reads at most a given number of bytes.
//
// Errors that refuse a file wrap ErrRefused and name the file and what it
// is ("a symbolic link", "a named pipe (FIFO)", ...).
//
// Files the user names outside a results folder (--junit FILE, a log given
// to check) have the Named functions: WriteNamed refuses a link at the
// name, OpenNamed follows one (the user chose it) but opens regular files
// only.
//
// What remains possible: a link in the path the user named (the root and
// its parents) is followed; a hard link to a file elsewhere on the same
// filesystem reads as a regular file (Linux refuses to make one to a file
// the maker does not own, fs.protected_hardlinks); and a file that the
// process writing it replaces between two gpuaccept commands is read as it
// is then.
package safefs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrRefused is wrapped by every error that refuses a file for what it is
// (a link, a special file, a folder where a file is wanted) or for where it
// is (a name outside the root).
var ErrRefused = errors.New("refused")

// RefusedError names a refused file and says what it is.
type RefusedError struct {
	// Path is the file as root/name.
	Path string
	// What it is: "a symbolic link", "a named pipe (FIFO)", "a device",
	// "a socket", "a folder", "not a folder", "outside the folder".
	What string
}

// Error renders "PATH is WHAT: ...".
func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s is %s: gpuaccept neither follows links nor reads special files in a results folder", e.Path, e.What)
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Unwrap() error { return ErrRefused }

func refused(root, name, what string) error {
	return &RefusedError{Path: filepath.Join(root, filepath.FromSlash(name)), What: what}
}

// Kind says what a file of mode m is, in words, as refusals name it: "a
// symbolic link", "a named pipe (FIFO)", "a device", "a socket", "a
// folder", "a regular file" or "a special file".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0 || m&fs.ModeCharDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a folder"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}

// split checks name and returns its folders and its last component.
func split(root, name string) ([]string, string, error) {
	n := filepath.ToSlash(filepath.Clean(filepath.FromSlash(name)))
	if name == "" || n == "." || !filepath.IsLocal(filepath.FromSlash(n)) {
		return nil, "", refused(root, name, "outside the folder")
	}
	parts := strings.Split(n, "/")
	return parts[:len(parts)-1], parts[len(parts)-1], nil
}

// walk opens root and descends into dirs, each of which must be a real
// folder (not a link); with create, missing folders are made (mode 0o755).
// The caller closes the returned Root.
func walk(root string, dirs []string, create bool) (*os.Root, error) {
	if create {
		// The root itself is the user's: made as named.
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	for i, d := range dirs {
		here := strings.Join(dirs[:i+1], "/")
		fi, err := r.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err = r.Mkdir(d, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = r.Lstat(d)
			}
		}
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: %w", filepath.Join(root, here), unwrapPath(err))
		}
		if !fi.IsDir() {
			r.Close()
			what := Kind(fi.Mode())
			if what == "a regular file" {
				what = "not a folder"
			}
			return nil, refused(root, here, what)
		}
		next, err := r.OpenRoot(d)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(root, here), unwrapPath(err))
		}
		got, err := next.Stat(".")
		if err != nil || !os.SameFile(fi, got) {
			next.Close()
			return nil, refused(root, here, "a folder replaced while it was opened")
		}
		r = next
	}
	return r, nil
}

// unwrapPath drops the *PathError of an os.Root call, whose path is
// relative to the folder: the caller names the whole path.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// lstatFile returns what is at base in r: nil when nothing is, an error
// refusing a link, special file or folder.
func lstatFile(r *os.Root, root, name, base string) (fs.FileInfo, error) {
	fi, err := r.Lstat(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, refused(root, name, Kind(fi.Mode()))
	}
	return fi, nil
}

// openChecked opens base in r with flag and checks that the file opened is
// the regular file want that Lstat saw (nil: any regular file), so that a
// link or FIFO swapped in between is refused, not used.
func openChecked(r *os.Root, root, name, base string, flag int, want fs.FileInfo) (*os.File, error) {
	// os.Root resolves a link swapped in after the Lstat (inside the
	// root only); SameFile below refuses what it finds.
	f, err := r.OpenFile(base, flag|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), unwrapPath(err))
	}
	got, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), err)
	}
	if !got.Mode().IsRegular() {
		f.Close()
		return nil, refused(root, name, Kind(got.Mode()))
	}
	if want != nil && !os.SameFile(want, got) {
		f.Close()
		return nil, refused(root, name, "a file replaced while it was opened")
	}
	return f, nil
}

// MkdirAll makes the folder name below root, and root itself, as needed
// (mode 0o755). A link or a file on the way is refused by name.
func MkdirAll(root, name string) error {
	if filepath.Clean(filepath.FromSlash(name)) == "." {
		return os.MkdirAll(root, 0o755)
	}
	dirs, base, err := split(root, name)
	if err != nil {
		return err
	}
	r, err := walk(root, append(dirs, base), true)
	if err != nil {
		return err
	}
	return r.Close()
}

// WriteFile writes data as root/name (mode perm), making its folders as
// needed: a temporary file in the same folder, renamed over the name once
// written and synced, so that a reader never sees half a file and nothing
// is written through a link. An existing link, special file or folder at
// the name is refused by name, not replaced.
func WriteFile(root, name string, data []byte, perm fs.FileMode) error {
	return write(root, name, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteNamed is WriteFile of a file the user named (--junit FILE): its
// folder is the root, followed as named; a link at the name itself is
// refused (another user may have planted it in /tmp).
func WriteNamed(path string, data []byte, perm fs.FileMode) error {
	return WriteFile(filepath.Dir(path), filepath.Base(path), data, perm)
}

func write(root, name string, perm fs.FileMode, fill func(io.Writer) error) error {
	dirs, base, err := split(root, name)
	if err != nil {
		return err
	}
	r, err := walk(root, dirs, true)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := lstatFile(r, root, name, base); err != nil {
		return err
	}
	tmp, f, err := createTemp(r, base, perm)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), unwrapPath(err))
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, base)
	}
	if err != nil {
		r.Remove(tmp)
		return fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), unwrapPath(err))
	}
	return nil
}

// createTemp creates a new file beside base: ".BASE.RANDOM.tmp".
func createTemp(r *os.Root, base string, perm fs.FileMode) (string, *os.File, error) {
	var err error
	for range 16 {
		var b [8]byte
		rand.Read(b[:])
		tmp := "." + base + "." + hex.EncodeToString(b[:]) + ".tmp"
		var f *os.File
		f, err = r.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
		if err == nil {
			return tmp, f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	return "", nil, err
}

// Create is os.Create of root/name that never writes through a link:
// its folders are made as needed, a regular file at the name is removed
// and a new one created in its place (O_CREATE|O_EXCL); a link, special
// file or folder there is refused by name. For files written as they
// grow (a step's log), where a run killed midway must leave what was
// written; WriteFile is for files written whole.
func Create(root, name string, perm fs.FileMode) (*os.File, error) {
	dirs, base, err := split(root, name)
	if err != nil {
		return nil, err
	}
	r, err := walk(root, dirs, true)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := lstatFile(r, root, name, base)
	if err != nil {
		return nil, err
	}
	if fi != nil {
		if err := r.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), unwrapPath(err))
		}
	}
	f, err := r.OpenFile(base, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), unwrapPath(err))
	}
	return f, nil
}

// CreateNew creates root/name, which must not exist (O_CREATE|O_EXCL),
// making its folders as needed. An existing file is an error wrapping
// fs.ErrExist; an existing link or special file is refused by name.
func CreateNew(root, name string, perm fs.FileMode) (*os.File, error) {
	dirs, base, err := split(root, name)
	if err != nil {
		return nil, err
	}
	r, err := walk(root, dirs, true)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := lstatFile(r, root, name, base); err != nil {
		return nil, err
	}
	f, err := r.OpenFile(base, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), unwrapPath(err))
	}
	return f, nil
}

// OpenAppend opens the existing regular file root/name for appending.
// A link or special file is refused by name; a missing file is an error
// wrapping fs.ErrNotExist.
func OpenAppend(root, name string) (*os.File, error) {
	return open(root, name, os.O_WRONLY|os.O_APPEND)
}

// Open opens the regular file root/name for reading. A link (even to a
// file inside the folder), FIFO, device, socket or folder is refused by
// name; a missing file is an error wrapping fs.ErrNotExist.
func Open(root, name string) (*os.File, error) {
	return open(root, name, os.O_RDONLY)
}

func open(root, name string, flag int) (*os.File, error) {
	dirs, base, err := split(root, name)
	if err != nil {
		return nil, err
	}
	r, err := walk(root, dirs, false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := lstatFile(r, root, name, base)
	if err != nil {
		return nil, err
	}
	if fi == nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), fs.ErrNotExist)
	}
	return openChecked(r, root, name, base, flag, fi)
}

// Check says whether root/name is a regular file that Open would open:
// nil, or Open's error. For paths handed to a reader gpuaccept does not
// control (an out-of-process plugin).
func Check(root, name string) error {
	f, err := Open(root, name)
	if err != nil {
		return err
	}
	return f.Close()
}

// ReadFile reads the regular file root/name, which may hold at most max
// bytes: a longer one is an error naming it and the limit.
func ReadFile(root, name string, max int64) ([]byte, error) {
	f, err := Open(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readMax(f, filepath.Join(root, filepath.FromSlash(name)), max)
}

func readMax(f *os.File, path string, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("read %s: more than %d bytes, the most gpuaccept reads of it", path, max)
	}
	return data, nil
}

// OpenNamed opens for reading a file the user named (a log given to
// check), following links as the user chose them, but only when it turns
// out a regular file: a FIFO, device or socket is refused by name without
// blocking on it.
func OpenNamed(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &RefusedError{Path: path, What: Kind(fi.Mode())}
	}
	return f, nil
}

// ReadNamed reads a file the user named as OpenNamed opens it, at most
// max bytes: a longer one is an error naming it and the limit.
func ReadNamed(path string, max int64) ([]byte, error) {
	f, err := OpenNamed(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readMax(f, path, max)
}

// Rename renames root/from to root/to, two names in the same folder; a
// link at from is renamed itself, never followed, and a link or special
// file at to is refused.
func Rename(root, from, to string) error {
	fdirs, fbase, err := split(root, from)
	if err != nil {
		return err
	}
	tdirs, tbase, err := split(root, to)
	if err != nil {
		return err
	}
	if strings.Join(fdirs, "/") != strings.Join(tdirs, "/") {
		return fmt.Errorf("rename %s to %s: not in the same folder", from, to)
	}
	r, err := walk(root, fdirs, false)
	if err != nil {
		return err
	}
	defer r.Close()
	if fi, err := r.Lstat(tbase); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
		return refused(root, to, Kind(fi.Mode()))
	}
	if err := r.Rename(fbase, tbase); err != nil {
		return fmt.Errorf("rename %s to %s: %w", filepath.Join(root, filepath.FromSlash(from)), tbase, unwrapPath(err))
	}
	return nil
}

// Lstat returns what is at root/name without following a link there; the
// folders on the way must be real folders.
func Lstat(root, name string) (fs.FileInfo, error) {
	dirs, base, err := split(root, name)
	if err != nil {
		return nil, err
	}
	r, err := walk(root, dirs, false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fi, err := r.Lstat(base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(root, filepath.FromSlash(name)), unwrapPath(err))
	}
	return fi, nil
}

// DirFS is an fs.FS of the folder root whose Open follows no link and
// opens no special file below it: regular files and folders only, each
// refused by name otherwise (the replay launcher's recordings, a results
// folder's baseline copy).
func DirFS(root string) fs.FS { return dirFS(root) }

type dirFS string

// Open implements fs.FS.
func (d dirFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return os.Open(string(d))
	}
	dirs, base, err := split(string(d), name)
	if err != nil {
		return nil, err
	}
	fi, err := Lstat(string(d), name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapRefused(err)}
	}
	if fi.IsDir() {
		r, err := walk(string(d), append(dirs, base), false)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapRefused(err)}
		}
		defer r.Close()
		return r.Open(".")
	}
	f, err := Open(string(d), name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unwrapRefused(err)}
	}
	return f, nil
}

// ReadFile implements fs.ReadFileFS, bounded at 1 GiB.
func (d dirFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) || name == "." {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return ReadFile(string(d), name, 1<<30)
}

// unwrapRefused keeps a refusal whole (its message names the file and
// what it is) and strips the path from other errors, which fs.PathError
// names again.
func unwrapRefused(err error) error {
	var re *RefusedError
	if errors.As(err, &re) {
		return re
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fs.ErrNotExist
	}
	return err
}
