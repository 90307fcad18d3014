package launch

import (
	"bytes"
	"io"
	"sync"
)

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
// the output contains Marker (a server's readiness line; it holds no line
// break). Lines are matched whole, whatever their length and however they
// arrive in pieces; only the last len(Marker)-1 bytes of an unfinished line
// are kept between writes, so memory stays bounded.
type MarkerWriter struct {
	W      io.Writer
	Marker []byte
	Found  func()
	// tail is the end of the line the last write left unfinished.
	tail []byte
	done bool
}

// Write scans p for the marker, then writes it to W.
func (m *MarkerWriter) Write(p []byte) (int, error) {
	rest := p
	for !m.done {
		seg, after, eol := bytes.Cut(rest, []byte{'\n'})
		if m.match(seg) {
			m.done = true
			m.Found()
			break
		}
		if !eol {
			m.keep(seg)
			break
		}
		m.tail = m.tail[:0]
		rest = after
	}
	return m.W.Write(p)
}

// match reports whether the marker lies in seg, or across the unfinished
// line's tail and seg.
func (m *MarkerWriter) match(seg []byte) bool {
	if bytes.Contains(seg, m.Marker) {
		return true
	}
	if len(m.tail) == 0 {
		return false
	}
	joint := append(m.tail[:len(m.tail):len(m.tail)], seg[:min(len(seg), len(m.Marker)-1)]...)
	return bytes.Contains(joint, m.Marker)
}

// keep remembers the end of an unfinished line: no more than a marker split
// across writes needs.
func (m *MarkerWriter) keep(seg []byte) {
	k := len(m.Marker) - 1
	if len(seg) >= k {
		m.tail = append(m.tail[:0], seg[len(seg)-k:]...)
		return
	}
	m.tail = append(m.tail, seg...)
	if len(m.tail) > k {
		m.tail = append(m.tail[:0], m.tail[len(m.tail)-k:]...)
	}
}
