package nccltests

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// Test inputs are real nccl-tests outputs under testdata/ (testdata/README.md
// says where each comes from), or real outputs edited in ways the README
// and the tests spell out.

// ntTestdata returns the contents of a file under testdata/.
func ntTestdata(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", rel))
	assert.NilError(t, err)
	return b
}

// ntFiles lists the files under testdata/ (without golden/) whose names end
// with ext, as paths relative to testdata/.
func ntFiles(t testing.TB, ext string) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{"h200x2-2.19.6", "h200x2-variants", "seeds", "edited", "public", "field"} {
		m, err := filepath.Glob(filepath.Join("testdata", dir, "*"+ext))
		assert.NilError(t, err)
		for _, f := range m {
			rel, err := filepath.Rel("testdata", f)
			assert.NilError(t, err)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	sort.Strings(out)
	assert.Assert(t, len(out) > 0)
	return out
}

// ntText parses a testdata text file.
func ntText(t testing.TB, rel string) *Output {
	t.Helper()
	o, err := ParseText(bytes.NewReader(ntTestdata(t, rel)), filepath.Base(rel))
	assert.NilError(t, err)
	return o
}

// ntJSON parses a testdata JSON file.
func ntJSON(t testing.TB, rel string) *Output {
	t.Helper()
	o, err := ParseJSON(bytes.NewReader(ntTestdata(t, rel)), filepath.Base(rel))
	assert.NilError(t, err)
	return o
}

// ntRow returns the first row of o with the given size.
func ntRow(t testing.TB, o *Output, size int64) Row {
	t.Helper()
	for _, r := range o.Rows {
		if r.Size == size {
			return r
		}
	}
	t.Fatalf("no row of size %d among %d rows", size, len(o.Rows))
	return Row{}
}

// ntNear asserts that got is within tol of want.
func ntNear(t testing.TB, got, want, tol float64, what string) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s: got %v, want %v (±%v)", what, got, want, tol)
	}
}

// ntHasDiag reports whether a Diag's text contains sub.
func ntHasDiag(ds []Diag, sub string) bool {
	for _, d := range ds {
		if strings.Contains(d.Text, sub) {
			return true
		}
	}
	return false
}

// ntG formats a float exactly and briefly.
func ntG(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// ntRender renders an Output compactly for golden files: everything it
// holds, one row per line.
func ntRender(o *Output) string {
	var b strings.Builder
	fmt.Fprintf(&b, "format %s | tests %q | nccl %q | collective %q\n", o.Format, o.TestsVersion, o.NCCLVersion, o.Collective)
	fmt.Fprintf(&b, "nthreads %d ngpus %d minbytes %d maxbytes %d reducedmaxbytes %d\n", o.NThreads, o.NGPUs, o.MinBytes, o.MaxBytes, o.ReducedMaxBytes)
	fmt.Fprintf(&b, "ranks %d rankcount %d groups %d", len(o.Ranks), o.RankCount, o.Groups)
	if o.RanksCutAt > 0 {
		// Only where a device list did not end: the other golden files
		// stay as they were.
		fmt.Fprintf(&b, " list cut after L%d", o.RanksCutAt)
	}
	b.WriteByte('\n')
	for _, r := range o.Ranks {
		fmt.Fprintf(&b, "  rank %d group %d pid %d host %q device %d bus %q name %q\n", r.Rank, r.Group, r.Pid, r.Host, r.Device, r.BusID, r.DeviceName)
	}
	fmt.Fprintf(&b, "footer %v outofbounds %d failed %v avgbusbw %s\n", o.FooterSeen, o.OutOfBounds, o.OutOfBoundsFailed, ntG(o.AvgBusBW))
	if o.NRanks != 0 || o.NNodes != 0 || o.Headers > 1 || len(o.InfoHosts) > 0 {
		hosts := map[string]bool{}
		for _, h := range o.InfoHosts {
			hosts[h] = true
		}
		fmt.Fprintf(&b, "info nranks %d nnodes %d headers %d infohosts %d ranks on %d hosts\n", o.NRanks, o.NNodes, o.Headers, len(o.InfoHosts), len(hosts))
	}
	for _, pt := range o.Parts {
		fmt.Fprintf(&b, "  part L%d-%d %q rows %d-%d ranks %d-%d headers %d footer %v outofbounds %d avgbusbw %s nranks %d",
			pt.FirstLine, pt.LastLine, pt.Collective, pt.RowFrom, pt.RowTo, pt.RankFrom, pt.RankTo, pt.Headers, pt.FooterSeen, pt.OutOfBounds, ntG(pt.AvgBusBW), pt.NRanks)
		// Only where they are set: the other golden files stay as they
		// were.
		if pt.Program != "" {
			fmt.Fprintf(&b, " program %q", pt.Program)
		}
		if pt.RanksCutAt > 0 {
			fmt.Fprintf(&b, " list cut after L%d", pt.RanksCutAt)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "rows %d (line size count type redop root | out-of-place | in-place: time algbw busbw wrong [maxerror] [i_min i_max i_p99 i_cv] [@timestamp])\n", len(o.Rows))
	perf := func(p *Perf) string {
		if p == nil {
			return "-"
		}
		s := fmt.Sprintf("%s %s %s %d", ntG(p.Time), ntG(p.AlgBW), ntG(p.BusBW), p.Wrong)
		if p.MaxError != 0 || p.HasMaxError {
			s += " maxerror=" + ntG(p.MaxError)
		}
		if p.IMin != 0 || p.IMax != 0 || p.IP99 != 0 || p.ICV != 0 {
			s += fmt.Sprintf(" iter=%s/%s/%s/%s", ntG(p.IMin), ntG(p.IMax), ntG(p.IP99), ntG(p.ICV))
		}
		// Rows of several cycles (the header line stays that of every
		// golden file): quantity=cycles:min/median/max, and xCYCLES at the
		// end of the row.
		if st := p.Stats; st != nil {
			for _, q := range []struct {
				name string
				s    *Stats
			}{{"time", &st.Time}, {"algbw", &st.AlgBW}, {"busbw", &st.BusBW}} {
				s += fmt.Sprintf(" %s=%d:%s/%s/%s", q.name, q.s.N, ntG(q.s.Min), ntG(q.s.Median()), ntG(q.s.Max))
			}
		}
		return s
	}
	for _, r := range o.Rows {
		fmt.Fprintf(&b, "  L%d %d %d %s %s %d | %s | %s", r.Line, r.Size, r.Count, r.Type, r.Redop, r.Root, perf(r.OutOfPlace), perf(r.InPlace))
		if r.Cycles > 0 {
			fmt.Fprintf(&b, " x%d", r.Cycles)
		}
		if r.Timestamp != "" {
			b.WriteString(" @" + r.Timestamp)
		}
		b.WriteByte('\n')
	}
	for _, d := range []struct {
		what string
		ds   []Diag
	}{{"errors", o.Errors}, {"warnings", o.Warnings}} {
		fmt.Fprintf(&b, "%s %d\n", d.what, len(d.ds))
		for _, x := range d.ds {
			fmt.Fprintf(&b, "  L%d %s\n", x.Line, x.Text)
		}
	}
	return b.String()
}
