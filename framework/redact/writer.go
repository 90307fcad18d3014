package redact

import (
	"bufio"
	"bytes"
	"io"
	"sync"
)

// Copy copies src to dst through r, masking secrets, and returns the bytes
// read. Lines of any length are handled.
func (r *Redactor) Copy(dst io.Writer, src io.Reader) (int64, error) {
	w := r.NewWriter(dst)
	n, err := io.Copy(w, src)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// Writer masks secrets in what is written through it, a line at a time,
// carrying what a line leaves open (a PEM key) to the next. It is safe for
// concurrent use. Close flushes a last line without a newline; it does not
// close the underlying writer.
type Writer struct {
	mu     sync.Mutex
	r      *Redactor
	raw    io.Writer
	dst    *bufio.Writer
	stream bool
	// printable escapes what is written (Printable): see Printed.
	printable bool
	st        state
	// pending is the unfinished line.
	pending []byte
	masked  bytes.Buffer
	err     error
}

// NewWriter returns a Writer that writes masked lines to dst, buffered:
// for files.
func (r *Redactor) NewWriter(dst io.Writer) *Writer {
	return &Writer{r: r, raw: dst, dst: bufio.NewWriterSize(dst, 64<<10)}
}

// Stream returns a Writer that writes each complete line to dst as soon as
// it has it, holding only an unfinished one: for standard output and
// error, where progress and errors must show when they happen.
func (r *Redactor) Stream(dst io.Writer) *Writer {
	w := r.NewWriter(dst)
	w.stream = true
	return w
}

// Printed returns a Stream that also escapes every control and format
// character of what it writes (Printable; line feeds and tabs kept): for
// standard output and error, which show file names, host names and
// benchmark output that may hold an ESC, a CR or a U+202E. A display's
// own cursor movements go through Control.
func (r *Redactor) Printed(dst io.Writer) *Writer {
	w := r.Stream(dst)
	w.printable = true
	return w
}

// Control writes seq to the terminal as it is, after the complete lines
// written before it: for a caller's own cursor movements (a live progress
// display's "\x1b[1A\x1b[2K", "\r"), never for text from elsewhere. An
// unfinished line is held until its end.
func (w *Writer) Control(seq string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if _, err := w.dst.WriteString(seq); err != nil {
		w.err = err
	} else {
		w.err = w.dst.Flush()
	}
	return w.err
}

// shown is b as w writes it: escaped (Printable) when w is Printed.
func (w *Writer) shown(b []byte) []byte {
	if !w.printable {
		return b
	}
	return []byte(Printable(string(b)))
}

// Unwrap returns the writer w writes to (for a terminal check).
func (w *Writer) Unwrap() io.Writer { return w.raw }

// maxPending bounds the bytes held while waiting for a newline: a longer
// line (a one-line -J JSON, a tool's dump) is masked and written in
// pieces, each cut where no secret, and no name waiting for its value,
// lies (see cut).
const maxPending = 1 << 20

// minKeep is the least of an unfinished line kept back at a cut: a name,
// flag or scheme near the end still gets its value after the cut.
const minKeep = 64 << 10

// Write masks complete lines and keeps the rest for the next call.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.pending = append(w.pending, p...)
	lines := false
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		i += len(w.pending) - len(p)
		w.emit(w.pending[:i+1])
		w.pending = w.pending[:copy(w.pending, w.pending[i+1:])]
		lines = true
	}
	for w.err == nil && len(w.pending) > maxPending {
		w.cut()
	}
	// Complete lines reach a file when written, not when 64 KiB have
	// gathered: a hung or killed step keeps what it printed (the buffer
	// only joins the lines of one write).
	if (w.stream || lines) && w.err == nil {
		w.err = w.dst.Flush()
	}
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// emit writes complete lines, masked.
func (w *Writer) emit(lines []byte) {
	w.masked.Reset()
	w.r.chunk(&w.st, &w.masked, lines)
	if _, err := w.dst.Write(w.shown(w.masked.Bytes())); err != nil && w.err == nil {
		w.err = err
	}
}

// cut writes the front of an overlong unfinished line. The cut falls
// before any secret, or name waiting for its value, that lies across it
// (looked for in the window before the cut and what is kept after it), so
// name and value are masked together. When the front still ends in a
// masked value (one longer than the window), what follows the cut is
// dropped up to that value's end: conservative, never the rest of a value
// in clear.
func (w *Writer) cut() {
	keep := max(minKeep, 2*w.r.longestKnown())
	c := len(w.pending) - keep
	from := max(0, c-cutWindow-w.r.longestKnown())
	spans := w.r.spans(&w.st, w.pending[from:])
	for moved := true; moved; {
		moved = false
		for _, s := range spans {
			if s.start+from < c && c < s.end+from && s.start+from > 0 {
				c, moved = s.start+from, true
			}
		}
	}
	out := w.r.segment(&w.st, w.pending[:c])
	if w.st.skip == skipNone {
		w.st.skip = maskedToEnd(out)
	}
	if _, err := w.dst.Write(w.shown(out)); err != nil && w.err == nil {
		w.err = err
	}
	w.pending = w.pending[:copy(w.pending, w.pending[c:])]
}

// cutWindow is how far before a cut a secret that reaches across it is
// looked for; a longer one is masked up to the cut and its rest dropped.
const cutWindow = 8 << 10

// maskedToEnd says what ends the value a masked piece of a line ends in
// (skipWord, ...), or skipNone when it does not end in Mask. A word's
// Mask may be followed by the closers or the quote it stopped at, which
// the rest of the word, after the cut, may go on from.
func maskedToEnd(out []byte) int {
	switch {
	case bytes.HasSuffix(out, []byte(`"`+Mask)):
		return skipDouble
	case bytes.HasSuffix(out, []byte(`'`+Mask)):
		return skipSingle
	case bytes.HasSuffix(out, []byte(Mask)):
		return skipWord
	}
	t := bytes.TrimRight(out, `]}),"'\`)
	if len(t) < len(out) && bytes.HasSuffix(t, []byte(Mask)) && !bytes.HasSuffix(t, []byte(`"`+Mask)) && !bytes.HasSuffix(t, []byte(`'`+Mask)) {
		return skipWord
	}
	return skipNone
}

func (r *Redactor) longestKnown() int {
	if r == nil {
		return 0
	}
	return r.longest
}

// Flush writes what is buffered, the unfinished line too.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if len(w.pending) > 0 {
		w.emit(w.pending)
		w.pending = w.pending[:0]
	}
	if w.err == nil {
		w.err = w.dst.Flush()
	}
	return w.err
}

// Close flushes; the underlying writer stays open.
func (w *Writer) Close() error { return w.Flush() }

// Clear returns the number (from 1) of the first line of src that holds a
// secret in clear: one that masking with r would change; 0 when there is
// none. A key's lines count from its BEGIN line on, as masking sees them.
// Errors are src's.
func (r *Redactor) Clear(src io.Reader) (int, error) {
	var st state
	buf := make([]byte, 0, chunkSize)
	line := 1
	eof := false
	for {
		if !eof {
			n, err := io.ReadFull(src, buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				eof = true
			} else if err != nil {
				return 0, err
			}
		}
		end := bytes.LastIndexByte(buf, '\n') + 1
		if eof {
			end = len(buf)
		}
		if eof && end == 0 {
			return 0, nil
		}
		if end == 0 {
			// One line longer than the buffer: read on.
			buf = append(buf, make([]byte, len(buf))...)[:len(buf)]
			continue
		}
		block := buf[:end]
		if r.quiet(&st, block) {
			line += bytes.Count(block, []byte{'\n'})
		} else {
			for len(block) > 0 {
				l := block
				if i := bytes.IndexByte(block, '\n'); i >= 0 {
					l = block[:i+1]
				}
				block = block[len(l):]
				if !bytes.Equal(r.segmentSplit(&st, l), l) {
					return line, nil
				}
				line++
			}
		}
		if eof {
			return 0, nil
		}
		buf = buf[:copy(buf, buf[end:])]
	}
}
