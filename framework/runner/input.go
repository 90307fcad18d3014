package runner

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// MaxInputBytes is the most one check input may hold once read: a .gz
// decompressed, or standard input (4 GiB, four times the largest text the
// plugins read). An input past it is refused, not cut, so that a
// decompression bomb stops at this size on disk and a few buffers in
// memory, and a verdict never rests on part of a file.
var MaxInputBytes int64 = 4 << 30

// MaxKeptBytes is the most check --out copies into its results folder,
// every log together as read (a .gz decompressed): 1 GiB, the largest
// text the plugins read. A few MiB of gzip that decompress to just under
// MaxInputBytes are judged, but not written out (and hashed) whole. Past
// it, check --out stops before anything is copied.
var MaxKeptBytes int64 = 1 << 30

// Stdin is what the check input "-" reads: the process's standard input.
// Tests replace it.
var Stdin io.Reader = os.Stdin

// StdinName is how messages and the results folder name standard input.
const StdinName = "stdin"

// input is one file given to check, as the plugins will read it.
type input struct {
	// logical is the absolute path the run knows it by: a .gz as if
	// decompressed in place (its folder, its name without .gz), so that it
	// pairs and finds its outputs.json as the plain file would; standard
	// input as a file of its own named StdinName.
	logical string
	// path is the file to read: the original, or the decompressed copy.
	path string
}

// inputs opens the files given to check, as files the plugins can read,
// in the folder tmp.
type inputs struct {
	tmp string
	// n counts the .gz decompressed, each into a folder of its own so that
	// two of one name do not meet.
	n int
	// stdin is set once "-" was read.
	stdin bool
}

// open makes f readable: a .gz (gzip, by its name) is decompressed, and
// "-" (standard input, gzip or not, read once) copied, into tmp; any other
// file is read where it is. Errors name the file: missing, a folder, not
// gzip, cut short, past MaxInputBytes, not a regular file (a FIFO or a
// device), or "-" given twice.
func (in *inputs) open(f string) (input, error) {
	if f == "-" {
		if in.stdin {
			return input{}, fmt.Errorf("log file -: standard input given twice (it is read once)")
		}
		in.stdin = true
		p := filepath.Join(in.tmp, StdinName)
		br := bufio.NewReader(Stdin)
		var r io.Reader = br
		if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
			zr, err := gzip.NewReader(br)
			if err != nil {
				return input{}, fmt.Errorf("log file %s (standard input): %w", StdinName, err)
			}
			defer zr.Close()
			r = zr
		}
		if err := in.save(r, p, StdinName+" (standard input)"); err != nil {
			return input{}, err
		}
		return input{logical: p, path: p}, nil
	}
	fi, err := os.Stat(f)
	if err != nil {
		return input{}, fmt.Errorf("log file: %w", err)
	}
	if fi.IsDir() {
		return input{}, fmt.Errorf("log file %s: is a folder", f)
	}
	if !fi.Mode().IsRegular() {
		// A FIFO would hang the plugin, /dev/zero fill the results folder.
		return input{}, fmt.Errorf("log file %s: not a regular file: %s", f, safefs.Kind(fi.Mode().Type()))
	}
	if fi.Size() > MaxInputBytes {
		return input{}, fmt.Errorf("log file %s: %s, more than %s (the cap on one check input): not judged", f, byteSize(fi.Size()), byteSize(MaxInputBytes))
	}
	abs, err := filepath.Abs(f)
	if err != nil {
		return input{}, fmt.Errorf("log file %s: %w", f, err)
	}
	if !isGzipName(f) {
		return input{logical: abs, path: abs}, nil
	}
	src, err := safefs.OpenNamed(f)
	if err != nil {
		return input{}, fmt.Errorf("log file: %w", err)
	}
	defer src.Close()
	zr, err := gzip.NewReader(bufio.NewReader(src))
	if err != nil {
		return input{}, fmt.Errorf("log file %s: not gzip data (%w)", f, err)
	}
	defer zr.Close()
	in.n++
	logical := abs[:len(abs)-len(".gz")]
	p := filepath.Join(in.tmp, strconv.Itoa(in.n), filepath.Base(logical))
	if err := in.save(zr, p, f); err != nil {
		return input{}, err
	}
	return input{logical: logical, path: p}, nil
}

// save copies r to p, refusing more than MaxInputBytes; what names the
// input in errors.
func (in *inputs) save(r io.Reader, p, what string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("log file %s: %w", what, err)
	}
	dst, err := os.Create(p)
	if err != nil {
		return fmt.Errorf("log file %s: %w", what, err)
	}
	n, err := io.Copy(dst, io.LimitReader(r, MaxInputBytes+1))
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("log file %s: gzip data cut short or corrupt after %d bytes (%w)", what, n, err)
	case err != nil:
		return fmt.Errorf("log file %s: read: %w", what, err)
	case n > MaxInputBytes:
		return fmt.Errorf("log file %s: more than %s once read (the cap on one check input): not judged", what, byteSize(MaxInputBytes))
	}
	return nil
}

func isGzipName(f string) bool { return strings.EqualFold(filepath.Ext(f), ".gz") }

func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// copyInto streams src to root/rel masked by red, through safefs (its
// folders made, no link below root followed or written through).
func copyInto(root, rel, src string, red *redact.Redactor) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := safefs.Create(root, rel, 0o644)
	if err != nil {
		return err
	}
	if _, err := red.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
