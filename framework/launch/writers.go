package launch

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os/exec"
	"sync"
	"syscall"
)

// ExitCode turns the error of a finished process (exec.Cmd.Wait) into its
// exit status: 0 for nil, the process's code, 128+N when signal N killed it
// (as shells report it), and -1 when it did not run or exit by itself.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// SyncWriter serialises writes to W, so a step's stdout and stderr can share
// one log without interleaving inside a write.
type SyncWriter struct {
	mu sync.Mutex
	W  io.Writer
}

// Write writes p to W under the lock.
func (s *SyncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.W.Write(p)
}

// MarkerWriter passes output on to W and calls Found once, when a line of
// the output contains Marker (a server's readiness line). Lines are matched
// whole even when they arrive in pieces; a line longer than 64 KiB is
// matched on its last part only, so memory stays bounded.
type MarkerWriter struct {
	W      io.Writer
	Marker []byte
	Found  func()
	line   []byte
	done   bool
}

// Write scans p for the marker, then writes it to W.
func (m *MarkerWriter) Write(p []byte) (int, error) {
	if !m.done {
		m.line = append(m.line, p...)
		sc := bufio.NewScanner(bytes.NewReader(m.line))
		sc.Buffer(make([]byte, 0, 4096), 128<<10)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), m.Marker) {
				m.done = true
				m.Found()
				break
			}
		}
		if i := bytes.LastIndexByte(m.line, '\n'); i >= 0 {
			m.line = append(m.line[:0], m.line[i+1:]...)
		}
		if len(m.line) > 64<<10 {
			m.line = m.line[len(m.line)-len(m.Marker):]
		}
	}
	return m.W.Write(p)
}
