package ibperf

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/result"
)

// Every row of real outputs that can tell has its BW average in the unit
// its header says, by MsgRate x size: the rule holds on perftest's own
// numbers (upstream's, the AINIC bundle's; Gb/s and MiB/s; write and read;
// -a sweeps, -D, post lists).
func TestRowUnitOnRealOutputs(t *testing.T) {
	for _, c := range []struct {
		file string
		want string
		told int // rows that tell, at least
	}{
		{seed + "ibperf.write_bw/server.0.log", unitGb, 23},
		{seed + "ibperf.write_bw/client.0.log", unitGb, 23},
		{seed + "ibperf.write_bw_gdr/server.0.log", unitGb, 23},
		{seed + "ibperf.write_bw_gdr/client.0.log", unitGb, 23},
		{"testdata/issues/perftest-issue132-write-bw-a-gbits.txt", unitGb, 4},
		{"testdata/issues/perftest-issue273-write-bw-postlist-D-gbits.txt", unitGb, 1},
		{"testdata/issues/ucx-issue8851-read-bw-a-mbsec.txt", unitMiB, 4},
	} {
		t.Run(c.file, func(t *testing.T) {
			o := parseFile(t, c.file)
			told := 0
			for _, r := range o.Rows {
				if u := RowUnit(r); u != "" {
					assert.Equal(t, u, c.want, "line %d: %+v", r.Line, r)
					told++
				}
			}
			assert.Assert(t, told >= c.told, "%d rows told", told)
			assert.Equal(t, len(o.Warnings), 0, "%+v", o.Warnings)
			for _, e := range o.Errors {
				assert.Assert(t, !strings.Contains(e.Text, "unit") && !strings.Contains(e.Text, "neither"), e.Text)
			}
		})
	}
}

// RowUnit's edges: a row that cannot tell says so rather than guess.
func TestRowUnitCannotTell(t *testing.T) {
	for _, r := range []Row{
		{Size: 65536, Avg: 97.5},                  // no MsgRate (a -D JSON of an old perftest)
		{Size: 65536, Avg: 0, MsgRate: 0.18},      // BW 0.00
		{Size: 1 << 30, Avg: 0.01, MsgRate: 1e-6}, // rounded beyond telling
		{Size: 0, Avg: 1, MsgRate: 1},
	} {
		assert.Equal(t, RowUnit(r), "", "%+v", r)
	}
	assert.Equal(t, RowUnit(Row{Size: 65536, Avg: 1000, MsgRate: 0.18}), unitNone)
}

// scaleBW multiplies the BW columns of the seed's rows by k and leaves
// MsgRate as it was.
func scaleBW(k float64, decimals int) func(string) string {
	return func(s string) string {
		return rowRE.ReplaceAllStringFunc(s, func(r string) string {
			f := strings.Fields(r)
			for _, i := range []int{2, 3} {
				v, _ := strconv.ParseFloat(f[i], 64)
				f[i] = strconv.FormatFloat(v*k, 'f', decimals, 64)
			}
			return strings.Join(f, " ")
		})
	}
}

// The unit comes from the rows when the header contradicts them. Each
// case is seed 004's real output with the edit its name says.
func TestUnitFromRows(t *testing.T) {
	server, client := seed+"ibperf.write_bw/server.0.log", seed+"ibperf.write_bw/client.0.log"
	gbHeader, mbHeader := "BW peak[Gb/sec] BW average[Gb/sec]", "BW peak[MB/sec] BW average[MB/sec]"
	for _, c := range []struct {
		name, src, side string
		edit            func(string) string
		unit, header    string
		warnAt          int // the warning's line
		warn, err       string
		avg             float64 // bw_avg at 8 MiB in Gb/s; -1: none
	}{
		{"server headed MB/sec over Gb/s values (its header changed to MB/sec)", server, "server",
			func(s string) string { return strings.Replace(s, gbHeader, mbHeader, 1) },
			unitGb, "MB/sec", 41, "headed BW average[MB/sec] but its values are Gb/s", "", 779.21},
		{"client headed Gb/sec over MiB/s values (its values converted to MiB/s)", client, "client",
			scaleBW(mibPerGb, 2),
			unitMiB, "Gb/sec", 35, "headed BW average[Gb/sec] but its values are MiB/s", "", 779.21},
		{"one side summed the other's MiB/s into its Gb/s (values x (1+119.2)/2, perftest before 26.x with --report_gbits on one side)", client, "client",
			scaleBW((1+mibPerGb)/2, 2),
			"Gb/sec", "Gb/sec", 0, "", "is neither Gb/s", -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := edited(t, c.src, c.side+".0.log", c.edit)
			o := parseFile(t, p)
			assert.Equal(t, o.Unit, c.unit)
			assert.Equal(t, o.HeaderUnit, c.header)
			var srv, cli string
			if c.side == "server" {
				srv = p
			} else {
				cli = p
			}
			pr := parseRun(t, "write_bw", nil, srv, cli)
			if c.err != "" {
				assert.Assert(t, strings.Contains(pr.Error, c.err) && strings.Contains(pr.Error, "bandwidth not read"), pr.Error)
				return
			}
			assert.Equal(t, pr.Error, "")
			got := metricAt(pr, "bw_avg", 8<<20)
			assert.Assert(t, math.Abs(got-c.avg) < 0.01, "bw_avg at 8 MiB %v, want %v", got, c.avg)
			var found bool
			for _, d := range pr.Diagnostics {
				found = found || d.Level == result.Warning && strings.Contains(d.Message, c.warn) &&
					d.Source == c.side+".0.log:"+strconv.Itoa(c.warnAt)
			}
			assert.Assert(t, found, "no warning %q in %+v", c.warn, pr.Diagnostics)
		})
	}
}
