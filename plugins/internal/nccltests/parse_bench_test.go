package nccltests

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// ntBigLog writes to dir a log of at least size bytes made of block
// repeated, and returns its path and length.
func ntBigLog(tb testing.TB, dir string, block []byte, size int) (string, int64) {
	tb.Helper()
	path := filepath.Join(dir, "big.log")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for n < int64(size) {
		k, err := f.Write(block)
		if err != nil {
			tb.Fatal(err)
		}
		n += int64(k)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path, n
}

// ntInfoLog is the shape of a large real log: one output of the
// NCCL_DEBUG=INFO run on two H200s, with its NCCL INFO lines repeated
// (as many ranks print them) until the log is size bytes; the rows stay 18.
func ntInfoLog(tb testing.TB, size int) []byte {
	info := ntTestdata(tb, "h200x2-variants/info.txt")
	i := bytes.Index(info, []byte("#\n#      "))
	var body []byte
	for _, l := range bytes.SplitAfter(info[:i], []byte("\n")) {
		if bytes.Contains(l, []byte("NCCL INFO")) {
			body = append(body, l...)
		}
	}
	out := append([]byte{}, info[:i]...)
	for len(out) < size-len(info) {
		out = append(out, body...)
	}
	return append(out, info[i:]...)
}

// BenchmarkParseText parses a 64 MB log from a file. "infolog" is the shape
// of a large real log (ntInfoLog: NCCL INFO lines from many ranks, one
// table of rows); "info" repeats the whole NCCL_DEBUG=INFO output, rows
// included; "seed000" repeats the seed 000 output (16 ranks), so it is
// mostly rows. It reports MB/s and allocations; scripts/bench-parse.sh puts
// the figures next to cat and dd reading the same file.
func BenchmarkParseText(b *testing.B) {
	for _, bc := range []struct{ name, file string }{
		{"infolog", ""},
		{"info", "h200x2-variants/info.txt"},
		{"seed000", "seeds/000_aks_ndmv4_all_reduce.txt"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			block := ntInfoLog(b, 64<<20)
			if bc.file != "" {
				block = ntTestdata(b, bc.file)
			}
			path, size := ntBigLog(b, b.TempDir(), block, 64<<20)
			b.SetBytes(size)
			b.ReportAllocs()
			rows := 0
			for b.Loop() {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				o, err := ParseText(f, "big.log")
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
				rows = len(o.Rows)
			}
			b.ReportMetric(float64(rows), "rows/op")
		})
	}
}

// ntRepeatReader returns head, then body n times, then tail, without
// holding more than those in memory.
type ntRepeatReader struct {
	parts [][]byte
	n     int
	cur   []byte
	stage int
}

func (r *ntRepeatReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		switch {
		case r.stage == 0:
			r.cur, r.stage = r.parts[0], 1
		case r.stage == 1 && r.n > 0:
			r.cur, r.n = r.parts[1], r.n-1
		case r.stage == 1:
			r.cur, r.stage = r.parts[2], 2
		default:
			return 0, io.EOF
		}
	}
	k := copy(p, r.cur)
	r.cur = r.cur[k:]
	return k, nil
}

// ntPeakHeap parses r and returns the rows found, the bytes read and the
// largest HeapInuse seen while parsing, sampled every millisecond.
func ntPeakHeap(t *testing.T, r io.Reader) (rows int, read int64, peak uint64) {
	t.Helper()
	runtime.GC()
	var max atomic.Uint64
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if m.HeapInuse > max.Load() {
			max.Store(m.HeapInuse)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	cr := &ntCountReader{r: r}
	o, err := ParseText(cr, "big")
	close(stop)
	wg.Wait()
	sample()
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(o)
	return len(o.Rows), cr.n, max.Load()
}

// ntCountReader counts the bytes read through it.
type ntCountReader struct {
	r io.Reader
	n int64
}

func (c *ntCountReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// TestParseTextMemoryFlat checks that memory does not grow with the input
// but only with the rows kept: a log of a whole run whose NCCL INFO lines
// make it 10 times larger needs about the same heap.
func TestParseTextMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("parses 440 MB")
	}
	info := ntTestdata(t, "h200x2-variants/info.txt")
	i := bytes.Index(info, []byte("#\n#      "))
	j := bytes.Index(info, []byte("# Out of bounds"))
	head, tail := info[:i], info[j:]
	var body []byte // the INFO lines that come before the rows
	for _, l := range bytes.SplitAfter(info[:i], []byte("\n")) {
		if bytes.Contains(l, []byte("NCCL INFO")) {
			body = append(body, l...)
		}
	}
	rowsPart := info[i:j]
	type run struct {
		rows      int
		read      int64
		peak      uint64
		repeats   int
		megabytes float64
	}
	var runs []run
	for _, n := range []int{4000, 40000} {
		r := &ntRepeatReader{parts: [][]byte{head, body, append(append([]byte{}, rowsPart...), tail...)}, n: n}
		rows, read, peak := ntPeakHeap(t, r)
		runs = append(runs, run{rows, read, peak, n, float64(read) / (1 << 20)})
		t.Logf("%.0f MB of log (%d rows): peak HeapInuse %.2f MB", float64(read)/(1<<20), rows, float64(peak)/(1<<20))
	}
	if runs[0].rows != runs[1].rows || runs[0].rows != 18 {
		t.Fatalf("rows %d and %d, want 18", runs[0].rows, runs[1].rows)
	}
	if runs[1].read < 9*runs[0].read {
		t.Fatalf("inputs of %d and %d bytes", runs[0].read, runs[1].read)
	}
	if runs[1].peak > runs[0].peak+4<<20 {
		t.Errorf("peak heap grew from %d to %d bytes with a 10 times larger input", runs[0].peak, runs[1].peak)
	}
}

// TestParseTextFile parses the file named by $NCCL_PARSE_FILE and logs what
// it found and the heap in use, for measuring a test binary with
// /usr/bin/time -v: go test -c -o nccl.test && NCCL_PARSE_FILE=big.log
// /usr/bin/time -v ./nccl.test -test.run=TestParseTextFile -test.v
func TestParseTextFile(t *testing.T) {
	path := os.Getenv("NCCL_PARSE_FILE")
	if path == "" {
		t.Skip("NCCL_PARSE_FILE not set")
	}
	if n, err := strconv.Atoi(os.Getenv("NCCL_PARSE_WRITE_MB")); err == nil {
		// Write the benchmark's large log first (scripts/bench-parse.sh).
		if err := os.WriteFile(path, ntInfoLog(t, n<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	if os.Getenv("NCCL_PARSE_NOSAMPLE") != "" {
		// Timing only: sampling the heap stops the world every millisecond.
		o, err := ParseText(f, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d rows in %v", path, len(o.Rows), time.Since(start))
		return
	}
	rows, read, peak := ntPeakHeap(t, f)
	d := time.Since(start)
	t.Logf("%s: %d bytes, %d rows in %v (%.0f MB/s), peak HeapInuse %.2f MB", path, read, rows, d, float64(read)/d.Seconds()/1e6, float64(peak)/(1<<20))
}

// ntCyclesLog is a real output with its result rows printed again and again
// until it holds rows rows, as nccl-tests -N prints its cycles: the same
// header, the sweep's rows repeated, one footer.
func ntCyclesLog(tb testing.TB, rel string, rows int) []byte {
	tb.Helper()
	var head, block, tail []byte
	for _, l := range bytes.SplitAfter(ntTestdata(tb, rel), []byte("\n")) {
		switch {
		case textRowStart(textTrimLeft(l), false):
			block = append(block, l...)
		case len(block) == 0:
			head = append(head, l...)
		default:
			tail = append(tail, l...)
		}
	}
	n := bytes.Count(block, []byte("\n"))
	if n == 0 {
		tb.Fatalf("%s has no result rows", rel)
	}
	out := append([]byte{}, head...)
	for i := 0; i < rows/n; i++ {
		out = append(out, block...)
	}
	for _, l := range bytes.SplitAfter(block, []byte("\n"))[:rows%n] {
		out = append(out, l...)
	}
	return append(out, tail...)
}

// BenchmarkParseTextCycles parses a log of 10^5 result rows: the real
// 2 x H200 all_reduce sweep (30 sizes) printed again and again as -N
// cycles print it. Memory must not grow with the cycles (B/op stays that
// of one sweep's rows plus the read buffer); scripts/bench-check.sh runs
// the whole of gpuaccept check on such logs.
func BenchmarkParseTextCycles(b *testing.B) {
	for _, rows := range []int{1e4, 1e5} {
		b.Run(strconv.Itoa(rows), func(b *testing.B) {
			path, size := ntBigLog(b, b.TempDir(), ntCyclesLog(b, "h200x2-2.19.6/all_reduce.txt", rows), 1)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				o, err := ParseText(f, "big.log")
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
				runtime.KeepAlive(o)
			}
		})
	}
}

// BenchmarkResultCycles is BenchmarkParseTextCycles through Result: the
// parse, the metrics and the checks the plugin hands over.
func BenchmarkResultCycles(b *testing.B) {
	path, size := ntBigLog(b, b.TempDir(), ntCyclesLog(b, "h200x2-2.19.6/all_reduce.txt", 1e5), 1)
	b.SetBytes(size)
	b.ReportAllocs()
	metrics := 0
	for b.Loop() {
		p := Result(plan.Output{Log: path}, Options{Test: "all_reduce"})
		if p.Error != "" {
			b.Fatal(p.Error)
		}
		metrics = len(p.Metrics)
	}
	b.ReportMetric(float64(metrics), "metrics/op")
}
