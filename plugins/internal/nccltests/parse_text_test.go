package nccltests

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
)

// TestParseTextGolden parses every text file under testdata/ and compares a
// rendering of the Output with testdata/golden/ (go test -update rewrites
// them).
func TestParseTextGolden(t *testing.T) {
	for _, rel := range ntFiles(t, ".txt") {
		t.Run(rel, func(t *testing.T) {
			golden.Assert(t, ntRender(ntText(t, rel)), filepath.Join("golden", rel+".golden"))
		})
	}
}

// TestParseTextH200 checks the real 2-GPU H200 runs value by value.
func TestParseTextH200(t *testing.T) {
	o := ntText(t, "h200x2-2.19.6/all_reduce.txt")
	assert.Equal(t, o.Format, "text")
	assert.Equal(t, o.TestsVersion, "2.19.6")
	assert.Equal(t, o.NCCLVersion, "2.28.9")
	assert.Equal(t, o.Collective, "all_reduce")
	assert.Equal(t, o.NThreads, 1)
	assert.Equal(t, o.NGPUs, 2)
	assert.Equal(t, o.MinBytes, int64(8))
	assert.Equal(t, o.MaxBytes, int64(4294967296))
	assert.Equal(t, o.ReducedMaxBytes, int64(0))
	assert.DeepEqual(t, o.Ranks, []Rank{
		{Rank: 0, Group: 0, Pid: 1550, Device: 0, Host: "vm", BusID: "0000:00:06", DeviceName: "NVIDIA H200"},
		{Rank: 1, Group: 0, Pid: 1550, Device: 1, Host: "vm", BusID: "0000:00:07", DeviceName: "NVIDIA H200"},
	})
	assert.Equal(t, o.RankCount, 2)
	assert.Equal(t, o.Groups, 1)
	assert.Equal(t, len(o.Rows), 30)
	assert.Equal(t, o.Rows[0].Line, 13)
	assert.Equal(t, o.Rows[0].Size, int64(8))
	r := ntRow(t, o, 4294967296)
	assert.DeepEqual(t, r, Row{Line: 42, Size: 4294967296, Count: 1073741824, Type: "float", Redop: "sum", Root: -1,
		OutOfPlace: &Perf{Time: 12484.2, AlgBW: 344.03, BusBW: 344.03, Wrong: 0, Prec: Prec{Known: true, Time: -1, AlgBW: -2, BusBW: -2}},
		InPlace:    &Perf{Time: 12502.2, AlgBW: 343.54, BusBW: 343.54, Wrong: 0, Prec: Prec{Known: true, Time: -1, AlgBW: -2, BusBW: -2}}})
	assert.Equal(t, o.OutOfBounds, 0)
	assert.Equal(t, o.OutOfBoundsFailed, false)
	assert.Equal(t, o.AvgBusBW, 103.407)
	assert.Equal(t, o.FooterSeen, true)
	assert.Equal(t, len(o.Errors), 0)
	assert.Equal(t, len(o.Warnings), 0)

	// Two MPI processes of one GPU each: two pids.
	m := ntText(t, "h200x2-2.19.6/mpi_np2_all_reduce.txt")
	assert.Equal(t, m.NGPUs, 1)
	assert.Equal(t, m.RankCount, 2)
	assert.Equal(t, m.Ranks[1].Pid, 1373)
	assert.Equal(t, ntRow(t, m, 4294967296).OutOfPlace.BusBW, 346.53)
	assert.Equal(t, m.AvgBusBW, 106.032)

	// sendrecv prints N/A for in-place #wrong: validation does not apply.
	s := ntText(t, "h200x2-2.19.6/sendrecv.txt")
	for _, r := range s.Rows {
		assert.Equal(t, r.OutOfPlace.Wrong, int64(0))
		assert.Equal(t, r.InPlace.Wrong, int64(-1), "size %d", r.Size)
	}
	// broadcast has a root and no reduction.
	b := ntText(t, "h200x2-2.19.6/broadcast.txt")
	assert.Equal(t, b.Rows[0].Root, 0)
	assert.Equal(t, b.Rows[0].Redop, "none")
}

// TestParseTextSeeds checks the nccl-tests output cut from the seed pages.
func TestParseTextSeeds(t *testing.T) {
	t.Run("000 16 ranks with NCCL INFO lines, header but no rank lines", func(t *testing.T) {
		o := ntText(t, "seeds/000_aks_ndmv4_all_reduce.txt")
		assert.Equal(t, len(o.Rows), 31)
		last := o.Rows[len(o.Rows)-1]
		assert.Equal(t, last.Size, int64(8589934592))
		assert.Equal(t, last.OutOfPlace.BusBW, 189.20)
		assert.Equal(t, last.InPlace.BusBW, 189.28)
		assert.Equal(t, o.Rows[0].Line, 12)
		assert.Equal(t, o.AvgBusBW, 57.347)
		assert.Equal(t, o.OutOfBounds, 0)
		assert.Equal(t, o.RankCount, 0)
		assert.Equal(t, o.Groups, 0)
		assert.Equal(t, o.TestsVersion, "")
		assert.Equal(t, len(o.Errors), 0)
		assert.Equal(t, len(o.Warnings), 0)
	})
	t.Run("001 line breaks lost", func(t *testing.T) {
		o := ntText(t, "seeds/001_a4x_all_gather_kubectl.txt")
		assert.Equal(t, len(o.Rows), 24)
		assert.Equal(t, o.Rows[0].Size, int64(1024))
		assert.Equal(t, o.Rows[23].Size, int64(8589934592))
		assert.Equal(t, o.Rows[23].OutOfPlace.BusBW, 453.99)
		assert.Equal(t, o.Rows[23].InPlace.BusBW, 477.96)
		for i, r := range o.Rows {
			assert.Equal(t, r.Line, 1)
			assert.Equal(t, r.Redop, "none")
			if i > 0 {
				assert.Equal(t, r.Size, 2*o.Rows[i-1].Size)
			}
		}
		assert.Equal(t, o.FooterSeen, true)
		assert.Equal(t, o.OutOfBounds, 0)
		assert.Equal(t, o.AvgBusBW, 175.233)
		assert.Equal(t, len(o.Errors)+len(o.Warnings), 0)

		o = ntText(t, "seeds/001_a4x_all_gather_tas.txt")
		assert.Equal(t, len(o.Rows), 24)
		assert.Equal(t, o.Rows[23].OutOfPlace.BusBW, 482.19)
		assert.Equal(t, o.AvgBusBW, 157.091)
		assert.Equal(t, len(o.Errors)+len(o.Warnings), 0)
	})
	t.Run("003 indented, NCCL version line, no footer", func(t *testing.T) {
		o := ntText(t, "seeds/003_a4_all_gather.txt")
		assert.Equal(t, o.NCCLVersion, "2.25.1+cuda12.8")
		assert.Equal(t, len(o.Rows), 23)
		assert.Equal(t, o.Rows[0].Size, int64(4096))
		assert.Equal(t, o.Rows[22].Size, int64(17179869184))
		assert.Equal(t, o.Rows[22].OutOfPlace.BusBW, 377.38)
		assert.Equal(t, o.FooterSeen, false)
		assert.Equal(t, o.OutOfBounds, -1)
		assert.Equal(t, o.AvgBusBW, -1.0)
	})
	t.Run("004 rccl-tests, two outputs with shell lines between", func(t *testing.T) {
		o := ntText(t, "seeds/004_mi355x_rccl_1node.txt")
		assert.Equal(t, o.TestsVersion, "2.17.9-develop:2596ca5f71")
		assert.Equal(t, o.NCCLVersion, "2.27.7")
		assert.Equal(t, o.Collective, "all_reduce")
		assert.Equal(t, len(o.Parts), 2)
		assert.Equal(t, o.Parts[1].Collective, "alltoall")
		assert.Equal(t, o.Parts[1].RowFrom, 29)
		assert.Equal(t, len(o.Rows), 29+25)
		assert.Equal(t, o.Rows[28].Size, int64(1073741824))
		assert.Equal(t, o.Rows[28].OutOfPlace.BusBW, 402.55)
		assert.Equal(t, o.Rows[29].Size, int64(0))
		assert.Equal(t, o.Rows[29].InPlace.Wrong, int64(-1))
		assert.Equal(t, len(o.Ranks), 16) // 8 per output
		assert.Equal(t, o.Ranks[7].DeviceName, "AMD Radeon Graphics")
		assert.Equal(t, o.Ranks[7].BusID, "0000:f5:00")
		assert.Equal(t, o.OutOfBounds, 0)
		assert.Equal(t, o.AvgBusBW, 105.615)
		assert.Equal(t, len(o.Errors), 0)
	})
	t.Run("004 two nodes under mpirun with UCX warnings", func(t *testing.T) {
		o := ntText(t, "seeds/004_mi355x_rccl_2node_all_reduce.txt")
		assert.Equal(t, o.RankCount, 16)
		assert.Equal(t, o.Ranks[15].Host, "Aliyun1")
		assert.Equal(t, o.Ranks[0].Host, "Aliyun3")
		assert.Equal(t, len(o.Rows), 31)
		assert.Equal(t, o.Rows[30].Size, int64(17179869184))
		assert.Equal(t, o.Rows[30].OutOfPlace.BusBW, 385.98)
		assert.Equal(t, len(o.Warnings), 0) // UCX WARN is not NCCL WARN
	})
	t.Run("another tool's output", func(t *testing.T) {
		o := ntText(t, "seeds/004_ib_write_bw_other_tool.txt")
		assert.DeepEqual(t, o, &Output{Format: "text", OutOfBounds: -1, AvgBusBW: -1})
	})
}

// TestParseTextVariants checks real outputs of the option variants run on
// two H200s (testdata/h200x2-variants).
func TestParseTextVariants(t *testing.T) {
	v := func(name string) *Output { return ntText(t, "h200x2-variants/"+name) }
	t.Run("-S timestamps", func(t *testing.T) {
		o := v("timestamps.txt")
		assert.Equal(t, len(o.Rows), 23)
		assert.Equal(t, o.Rows[0].Timestamp, "2026-11-30 06:20:11")
		assert.Equal(t, o.Rows[22].Timestamp, "2026-11-30 06:20:12")
		assert.Equal(t, o.Rows[22].InPlace.BusBW, 244.03)
		assert.Equal(t, len(o.Warnings)+len(o.Errors), 0)
	})
	t.Run("-I per-iteration columns", func(t *testing.T) {
		o := v("periter.txt")
		assert.Equal(t, len(o.Rows), 23)
		p2 := Prec{Known: true, Time: -2, AlgBW: -2, BusBW: -2}
		assert.DeepEqual(t, o.Rows[0].OutOfPlace, &Perf{Time: 22.07, AlgBW: 0, BusBW: 0, Wrong: 0, IMin: 18.02, IMax: 33.02, IP99: 33.02, ICV: 15.38, Prec: p2})
		assert.DeepEqual(t, o.Rows[0].InPlace, &Perf{Time: 21.25, AlgBW: 0, BusBW: 0, Wrong: 0, IMin: 18.05, IMax: 33.79, IP99: 33.79, ICV: 16.86, Prec: p2})
		o = v("periter_ts.txt")
		assert.Equal(t, len(o.Rows), 6)
		assert.Equal(t, o.Rows[5].Timestamp, "2026-11-30 06:20:16")
		assert.Equal(t, o.Rows[5].InPlace.ICV, 19.58)
		assert.Equal(t, len(o.Warnings)+len(o.Errors), 0)
	})
	t.Run("-C cputime", func(t *testing.T) {
		o := v("cputime.txt")
		assert.Equal(t, o.Rows[0].OutOfPlace.Time, 11.69)
		assert.Equal(t, o.Rows[0].InPlace.Time, 12.53)
	})
	t.Run("-c 0 N/A", func(t *testing.T) {
		for _, name := range []string{"nocheck.txt", "a2a_nocheck.txt"} {
			o := v(name)
			assert.Assert(t, len(o.Rows) > 5)
			for _, r := range o.Rows {
				assert.Equal(t, r.OutOfPlace.Wrong, int64(-1))
				assert.Equal(t, r.InPlace.Wrong, int64(-1))
			}
		}
		assert.Equal(t, v("a2a_nocheck.txt").Rows[0].Size, int64(0))
	})
	t.Run("-d all -o all", func(t *testing.T) {
		o := v("dall_oall.txt")
		assert.Equal(t, len(o.Rows), 12*6*3)
		types, ops := map[string]bool{}, map[string]bool{}
		for _, r := range o.Rows {
			types[r.Type], ops[r.Redop] = true, true
		}
		assert.Equal(t, len(types), 12)
		assert.Equal(t, len(ops), 6)
		assert.Equal(t, o.Rows[0].Type+"/"+o.Rows[0].Redop, "int8/sum")
		assert.Equal(t, o.Rows[3].Type+"/"+o.Rows[3].Redop, "int8/prod")
		assert.Assert(t, types["f8e4m3"] && types["bfloat16"] && ops["mulsum"])
	})
	t.Run("-N 3", func(t *testing.T) {
		// The same six sizes three times: one row each, worst of three.
		o := v("cycles3.txt")
		assert.Equal(t, len(o.Rows), 6)
		for _, r := range o.Rows {
			assert.Equal(t, r.Cycles, 3)
			assert.Equal(t, r.InPlace.Stats.BusBW.N, 3)
		}
		assert.Equal(t, o.Rows[5].Line, 17)
		assert.Equal(t, o.Rows[5].OutOfPlace.BusBW, 63.48)
		assert.Equal(t, o.Rows[5].OutOfPlace.Stats.BusBW.Median(), 69.12)
		assert.Equal(t, o.Rows[5].OutOfPlace.Stats.BusBW.Max, 69.31)
		assert.Equal(t, o.Rows[5].OutOfPlace.Time, 16.52)
	})
	t.Run("-t 2", func(t *testing.T) {
		o := v("threads2.txt")
		assert.Equal(t, o.NThreads, 2)
		assert.Equal(t, o.NGPUs, 1)
		assert.Equal(t, o.RankCount, 2)
	})
	t.Run("broadcast -r 1", func(t *testing.T) {
		o := v("bcastroot.txt")
		for _, r := range o.Rows {
			assert.Equal(t, r.Root, 1)
		}
	})
	t.Run("maxBytes reduced for lack of memory", func(t *testing.T) {
		o := v("reduce_max.txt")
		assert.Equal(t, o.MaxBytes, int64(214748364800))
		assert.Equal(t, o.ReducedMaxBytes, int64(48247057066))
		assert.Equal(t, len(o.Rows), 1)
		assert.Equal(t, o.Rows[0].Size, int64(48247057064))
		assert.Equal(t, o.Rows[0].OutOfPlace.Time, 138000.0)
	})
	t.Run("NCCL_DEBUG=INFO", func(t *testing.T) {
		o := v("info.txt")
		assert.Equal(t, len(o.Rows), 18)
		assert.Equal(t, o.NCCLVersion, "2.28.9") // the header's, the first seen
		assert.Equal(t, len(o.Warnings)+len(o.Errors), 0)
		assert.Equal(t, o.Rows[0].Line, 137)
	})
	t.Run("NCCL WARN and Test NCCL failure", func(t *testing.T) {
		o := v("noiface.txt")
		assert.Equal(t, len(o.Rows), 0)
		assert.DeepEqual(t, o.Warnings, []Diag{{Line: 10, Text: "Bootstrap : no socket interface found"}})
		assert.DeepEqual(t, o.Errors, []Diag{
			{Line: 11, Text: "vm: Test NCCL failure common.cu:1550 'invalid usage (run with NCCL_DEBUG=WARN for details) / '"},
			{Line: 12, Text: ".. vm pid 1223: Test failure common.cu:1454"},
		})
		assert.Equal(t, o.FooterSeen, false)
	})
	t.Run("Invalid number of GPUs", func(t *testing.T) {
		o := v("badgpus.txt")
		assert.Equal(t, len(o.Rows), 0)
		assert.Equal(t, o.RankCount, 0)
		assert.Equal(t, o.NGPUs, 4)
		assert.DeepEqual(t, o.Errors, []Diag{
			{Line: 6, Text: "Invalid number of GPUs: 4 requested but only 2 were found."},
			{Line: 8, Text: ".. vm pid 1154: Test failure common.cu:1454"},
		})
	})
	t.Run("invalid option", func(t *testing.T) {
		o := v("badopt.txt")
		assert.Equal(t, len(o.Errors), 3)
		assert.Equal(t, o.Errors[2].Text, "USAGE: all_reduce_perf")
		assert.Equal(t, len(o.Rows), 0)
	})
	t.Run("NCCL_TESTS_MIN_BW not met", func(t *testing.T) {
		o := v("minbw.txt")
		assert.Equal(t, o.AvgBusBW, 145.575)
		assert.Assert(t, ntHasDiag(o.Warnings, "145.575 GB/s as FAILED"))
		assert.Assert(t, ntHasDiag(o.Errors, "Test failure"))
		assert.Equal(t, o.OutOfBoundsFailed, false)
	})
	t.Run("killed run", func(t *testing.T) {
		o := v("killed.txt")
		assert.Equal(t, len(o.Rows), 52)
		assert.Equal(t, o.Rows[51].Size, int64(428867584))
		assert.Equal(t, o.FooterSeen, false)
		assert.Equal(t, len(o.Errors), 0) // it stopped at a line end
	})
}

// TestParseTextEdited checks real outputs edited as testdata/README.md
// says, for forms no real sample shows.
func TestParseTextEdited(t *testing.T) {
	t.Run("2019 format: no root, error column", func(t *testing.T) {
		o := ntText(t, "edited/old_2019_all_reduce.txt")
		assert.Equal(t, len(o.Rows), 30)
		assert.Equal(t, o.NGPUs, 2)
		assert.DeepEqual(t, o.Ranks[1], Rank{Rank: 1, Pid: 1550, Device: 1, Host: "vm", BusID: "0x07", DeviceName: "NVIDIA H200"})
		r := ntRow(t, o, 4294967296)
		assert.DeepEqual(t, r, Row{Line: 39, Size: 4294967296, Count: 1073741824, Type: "float", Redop: "sum", Root: -1,
			OutOfPlace: &Perf{Time: 12484, AlgBW: 344.03, BusBW: 344.03, Wrong: -1, MaxError: 5e-07, HasMaxError: true, Prec: Prec{Known: true, AlgBW: -2, BusBW: -2, MaxError: -7}},
			InPlace:    &Perf{Time: 12502, AlgBW: 343.54, BusBW: 343.54, Wrong: -1, HasMaxError: true, Prec: Prec{Known: true, AlgBW: -2, BusBW: -2}}})
		assert.Equal(t, o.AvgBusBW, 103.407)
		assert.Equal(t, len(o.Errors)+len(o.Warnings), 0)

		b := ntText(t, "edited/old_2019_broadcast.txt")
		assert.Equal(t, len(b.Rows), 30)
		assert.Equal(t, b.Rows[0].Root, 0)
		assert.Equal(t, b.Rows[0].Redop, "")
	})
	t.Run("2019 format without its header", func(t *testing.T) {
		// Rows alone: one column fewer than today's, so the old layout.
		var rows []string
		for _, l := range strings.Split(string(ntTestdata(t, "edited/old_2019_all_reduce.txt")), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "4294967296") || strings.HasPrefix(strings.TrimSpace(l), "8 ") {
				rows = append(rows, l)
			}
		}
		assert.Equal(t, len(rows), 2)
		o, err := ParseText(strings.NewReader(strings.Join(rows, "\n")+"\n"), "rows")
		assert.NilError(t, err)
		assert.Equal(t, len(o.Rows), 2)
		assert.DeepEqual(t, o.Rows[1].OutOfPlace, &Perf{Time: 12484, AlgBW: 344.03, BusBW: 344.03, Wrong: -1, MaxError: 5e-07, HasMaxError: true, Prec: Prec{Known: true, AlgBW: -2, BusBW: -2, MaxError: -7}})
	})
	t.Run("exponent forms, #wrong 1e+06, FAILED", func(t *testing.T) {
		o := ntText(t, "edited/exponent_wrong_failed.txt")
		r := ntRow(t, o, 4294967296)
		assert.Equal(t, r.OutOfPlace.Time, 12000.0)
		assert.Equal(t, r.InPlace.Time, 13000.0)
		// "1.2e+04" stands for 11500 to 12500: its last digit is the thousands.
		assert.Equal(t, r.OutOfPlace.Prec.Time, int8(3))
		assert.Equal(t, r.OutOfPlace.Prec.HalfUnit(r.OutOfPlace.Prec.Time), 500.0)
		assert.Equal(t, ntRow(t, o, 2147483648).OutOfPlace.Wrong, int64(1000000))
		assert.Equal(t, o.OutOfBounds, 1)
		assert.Equal(t, o.OutOfBoundsFailed, true)
		assert.Equal(t, len(o.Rows), 30)
	})
	t.Run("NCCL_TESTS_SPLIT groups", func(t *testing.T) {
		o := ntText(t, "edited/split_groups.txt")
		assert.Equal(t, o.Groups, 2)
		assert.Equal(t, o.Ranks[1].Group, 1)
	})
	t.Run("empty redop column, as hypercube_perf prints it", func(t *testing.T) {
		o := ntText(t, "edited/empty_redop.txt")
		want := ntText(t, "h200x2-2.19.6/all_gather.txt")
		assert.Equal(t, len(o.Rows), 30)
		assert.Equal(t, len(o.Errors)+len(o.Warnings), 0)
		for i, r := range o.Rows {
			w := want.Rows[i]
			w.Redop = ""
			assert.DeepEqual(t, r, w)
		}
		// The same with its line breaks lost, as pages show outputs: rows
		// are told apart by the numbers in the redop column.
		flat := strings.Join(strings.Fields(string(ntTestdata(t, "edited/empty_redop.txt"))), " ")
		f, err := ParseText(strings.NewReader(flat), "flat")
		assert.NilError(t, err)
		assert.Equal(t, len(f.Rows), 30)
		assert.Equal(t, f.Rows[29].InPlace.BusBW, 311.39)
		assert.Equal(t, len(f.Errors)+len(f.Warnings), 0)
	})
	t.Run("no out-of-place part", func(t *testing.T) {
		o := ntText(t, "edited/null_out_of_place.txt")
		assert.Equal(t, len(o.Rows), 30)
		r := ntRow(t, o, 4294967296)
		assert.Assert(t, r.OutOfPlace == nil)
		assert.DeepEqual(t, r.InPlace, &Perf{Time: 12502.2, AlgBW: 343.54, BusBW: 343.54, Prec: Prec{Known: true, Time: -1, AlgBW: -2, BusBW: -2}})
	})
	t.Run("Test timeout in the middle of a row", func(t *testing.T) {
		o := ntText(t, "edited/timeout.txt")
		assert.Equal(t, len(o.Rows), 20)
		assert.Equal(t, len(o.Errors), 4)
		assert.Equal(t, o.Errors[0].Line, 33)
		assert.Assert(t, is.Contains(o.Errors[0].Text, "Test timeout (10s)"))
		assert.Equal(t, o.FooterSeen, false)
	})
	t.Run("Test CUDA failure", func(t *testing.T) {
		o := ntText(t, "edited/cuda_failure.txt")
		assert.Equal(t, len(o.Rows), 0)
		assert.Equal(t, o.RankCount, 2)
		assert.DeepEqual(t, o.Errors, []Diag{
			{Line: 9, Text: "vm: Test CUDA failure common.cu:1008 'out of memory'"},
			{Line: 10, Text: ".. vm pid 1550: Test failure common.cu:1454"},
		})
	})
	t.Run("# error: line", func(t *testing.T) {
		o := ntText(t, "edited/error_line.txt")
		assert.Equal(t, len(o.Rows), 30)
		assert.DeepEqual(t, o.Errors, []Diag{{Line: 48, Text: "nccl-tests: error: Bootstrap : no socket interface found"}})
	})
}

// TestParseTextConcatenated checks two whole outputs in one text.
func TestParseTextConcatenated(t *testing.T) {
	ar := ntTestdata(t, "h200x2-2.19.6/all_reduce.txt")
	ag := ntTestdata(t, "h200x2-2.19.6/all_gather.txt")
	o, err := ParseText(io.MultiReader(bytes.NewReader(ar), bytes.NewReader(ag)), "both")
	assert.NilError(t, err)
	assert.Equal(t, len(o.Rows), 60)
	assert.Equal(t, o.Rows[29].Size, int64(4294967296))
	assert.Equal(t, o.Rows[29].Redop, "sum")
	assert.Equal(t, o.Rows[30].Size, int64(0))
	assert.Equal(t, o.Rows[30].Redop, "none")
	assert.Equal(t, o.Rows[30].Line, strings.Count(string(ar), "\n")+13)
	assert.Equal(t, o.Collective, "all_reduce")
	assert.Equal(t, o.RankCount, 4)
	assert.Equal(t, o.AvgBusBW, 103.407)
	assert.Equal(t, o.OutOfBounds, 0)
	assert.Equal(t, len(o.Errors), 0)

	// Each test's output is a part of its own, from its first header line.
	arLines := strings.Count(string(ar), "\n")
	assert.Equal(t, len(o.Parts), 2)
	for i, want := range []struct {
		coll         string
		first, last  int
		rows, footer int
		avg          float64
	}{{"all_reduce", 1, arLines, 30, 0, 103.407}, {"all_gather", arLines + 1, arLines + strings.Count(string(ag), "\n"), 30, 0, 84.316}} {
		pt := o.Parts[i]
		assert.Equal(t, pt.Collective, want.coll)
		assert.Equal(t, pt.FirstLine, want.first)
		assert.Equal(t, pt.LastLine, want.last)
		assert.Equal(t, pt.RowTo-pt.RowFrom, want.rows)
		assert.Equal(t, pt.RankTo-pt.RankFrom, 2)
		assert.Equal(t, pt.OutOfBounds, want.footer)
		assert.Equal(t, pt.AvgBusBW, want.avg)
		assert.Equal(t, pt.Headers, 1)

		sel, skipped := o.Select(want.coll)
		assert.Equal(t, sel.Collective, want.coll)
		assert.Equal(t, len(sel.Rows), 30)
		assert.DeepEqual(t, sel.Rows, o.Rows[pt.RowFrom:pt.RowTo])
		assert.Equal(t, sel.RankCount, 2)
		assert.Equal(t, sel.AvgBusBW, want.avg)
		assert.Equal(t, sel.MaxBytes, int64(4294967296))
		assert.Assert(t, sel.Parts == nil)
		assert.Equal(t, len(skipped), 1)
		assert.Equal(t, skipped[0].Collective, o.Parts[1-i].Collective)
	}
	// A test the text does not hold: the whole, for the caller to name.
	sel, skipped := o.Select("broadcast")
	assert.Assert(t, sel == o && skipped == nil)
}

// TestParseTextTruncated cuts real outputs short.
func TestParseTextTruncated(t *testing.T) {
	ar := string(ntTestdata(t, "h200x2-2.19.6/all_reduce.txt"))
	last := "  4294967296    1073741824     float     sum      -1  12484.2  344.03  344.03       0  12502.2  343.54  343.54       0\n"
	at := strings.Index(ar, last)
	assert.Assert(t, at > 0)
	flat := string(ntTestdata(t, "seeds/001_a4x_all_gather_kubectl.txt"))
	flatAt := strings.Index(flat, "8589934592 268435456 float none -1 16556 518.85")
	assert.Assert(t, flatAt > 0)
	for _, tc := range []struct {
		name  string
		input string
		rows  int
		err   string // text of the one Errors entry; "" for none
	}{
		{"mid-number", ar[:at+len("  4294967296    1073741824     float     sum      -1  12484.2  344.0")], 29, "result row cut short after 7 of 13 columns (output truncated?): 4294967296 1073741824 float sum -1 12484.2 344.0"},
		{"after a space", ar[:at+len("  4294967296    1073741824     float ")], 29, "result row cut short after 3 of 13 columns"},
		{"last column without line end", ar[:at+len(last)-1], 29, "last result row has no line end: output truncated: 4294967296"},
		{"after the size", ar[:at+len("  4294967296")], 29, "result row cut short after 1 of 13 columns"},
		{"at a line end", ar[:at], 29, ""},
		{"line end after the out-of-place part", ar[:at+len("  4294967296    1073741824     float     sum      -1  12484.2  344.03  344.03       0")] + "\n", 29, "result row cut short after 9 of 13 columns"},
		{"whole row, no footer", ar[:at+len(last)], 30, ""},
		{"flattened, mid-row", flat[:flatAt+len("8589934592 268435456 float none -1 16556 518.")], 23, "result row cut short after 7 of 13 columns"},
		{"flattened, before the footer", flat[:strings.Index(flat, "# Out of")], 24, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseText(strings.NewReader(tc.input), "cut")
			assert.NilError(t, err)
			assert.Equal(t, len(o.Rows), tc.rows)
			assert.Equal(t, o.FooterSeen, false)
			if tc.err == "" {
				assert.Equal(t, len(o.Errors), 0, "%v", o.Errors)
				return
			}
			assert.Equal(t, len(o.Errors), 1, "%v", o.Errors)
			assert.Assert(t, is.Contains(o.Errors[0].Text, tc.err))
			assert.Equal(t, o.Errors[0].Line, strings.Count(strings.TrimSuffix(tc.input, "\n"), "\n")+1)
		})
	}
}

// TestParseTextBadInput feeds inputs that are not nccl-tests output.
func TestParseTextBadInput(t *testing.T) {
	none := &Output{Format: "text", OutOfBounds: -1, AvgBusBW: -1}
	garbage := make([]byte, 0, 3<<16)
	for i := 0; len(garbage) < cap(garbage); i++ {
		garbage = append(garbage, byte(i*7919>>3))
	}
	for _, tc := range []struct {
		name  string
		input []byte
	}{
		{"empty", nil},
		{"newlines", []byte("\n\n\r\n")},
		{"garbage", garbage},
		{"zeros", make([]byte, 100000)},
		{"JSON", ntTestdata(t, "h200x2-2.19.6/all_reduce.json")},
		{"another tool", ntTestdata(t, "seeds/004_ib_write_bw_other_tool.txt")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseText(bytes.NewReader(tc.input), tc.name)
			assert.NilError(t, err)
			assert.Equal(t, len(o.Rows), 0)
			if tc.name != "garbage" {
				assert.DeepEqual(t, o, none)
			}
		})
	}
}

// TestParseTextBufferSizes checks that what the parser finds does not
// depend on how the input is split into reads and buffers.
func TestParseTextBufferSizes(t *testing.T) {
	for _, rel := range ntFiles(t, ".txt") {
		data := ntTestdata(t, rel)
		want, err := ParseText(bytes.NewReader(data), "x")
		assert.NilError(t, err)
		for _, size := range []int{16, 17, 61, 100, 4095, 4096, 4097} {
			got, err := parseTextSized(iotest.HalfReader(bytes.NewReader(data)), "x", size)
			assert.NilError(t, err)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s with a %d byte buffer: (-want +got)\n%s", rel, size, d)
			}
		}
	}
}

// TestParseTextLongLines checks lines of megabytes: a flattened output
// repeated on one line, and a line that holds no rows.
func TestParseTextLongLines(t *testing.T) {
	flat := bytes.TrimRight(ntTestdata(t, "seeds/001_a4x_all_gather_kubectl.txt"), "\n")
	const n = 4000
	line := bytes.Repeat(append(flat, ' '), n)
	assert.Assert(t, len(line) > 7<<20)
	o, err := ParseText(bytes.NewReader(append(line, '\n')), "long")
	assert.NilError(t, err)
	// The same rows n times over are n cycles of one sweep.
	assert.Equal(t, len(o.Rows), 24)
	assert.Equal(t, o.Rows[23].Cycles, n)
	assert.Equal(t, o.Rows[23].OutOfPlace.BusBW, 453.99)
	assert.Equal(t, o.Rows[23].OutOfPlace.Stats.BusBW.N, n)
	assert.Equal(t, o.OutOfBounds, 0)
	assert.Equal(t, o.AvgBusBW, 175.233)
	assert.Equal(t, len(o.Errors)+len(o.Warnings), 0)

	// A line of 8 MB of a single token, then a normal output.
	huge := append(bytes.Repeat([]byte("x"), 8<<20), '\n')
	o, err = ParseText(io.MultiReader(bytes.NewReader(huge), bytes.NewReader(ntTestdata(t, "h200x2-2.19.6/all_reduce.txt"))), "huge")
	assert.NilError(t, err)
	assert.Equal(t, len(o.Rows), 30)
	assert.Equal(t, o.Rows[0].Line, 14)

	// 8 MB of '#' tokens and digits in one comment line.
	hashes := append([]byte("# "), bytes.Repeat([]byte("# 1 2 float "), 700000)...)
	o, err = ParseText(bytes.NewReader(hashes), "hashes")
	assert.NilError(t, err)
	assert.Equal(t, len(o.Rows), 0)
}

// ntErrReader returns its data, then an error.
type ntErrReader struct {
	data []byte
	err  error
}

func (r *ntErrReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestParseTextReadError checks that a read error is returned, wrapped,
// with what was parsed before it.
func TestParseTextReadError(t *testing.T) {
	data := ntTestdata(t, "h200x2-2.19.6/all_reduce.txt")
	cut := bytes.Index(data, []byte("     1048576"))
	boom := errors.New("connection reset")
	o, err := ParseText(&ntErrReader{data: data[:cut], err: boom}, "remote.log")
	assert.Assert(t, errors.Is(err, boom))
	assert.ErrorContains(t, err, "remote.log:30")
	assert.Equal(t, len(o.Rows), 17)
}

// TestParseTextLauncherLabels checks a real MPI run's output with every
// line labelled as mpirun --tag-output, srun --label and kubectl logs
// --prefix/--timestamps do, alone and stacked, with LF and CRLF line ends:
// the labels are skipped.
func TestParseTextLauncherLabels(t *testing.T) {
	data := string(ntTestdata(t, "h200x2-2.19.6/mpi_np2_all_reduce.txt"))
	want := ntText(t, "h200x2-2.19.6/mpi_np2_all_reduce.txt")
	assert.Equal(t, len(want.Rows), 30)
	for _, label := range []string{"[1,0]<stdout>:", "[1,0]<stderr>: ", "0: ", "  1: ",
		"2024-05-01T12:00:00.123456789Z ", "2024-05-01T12:00:00Z ", "[pod/nccl-test-launcher-x7k2p/mpi-launcher] ",
		"[pod/p/c] 2024-05-01T12:00:00.123456789Z ", "2024-05-01T12:00:00.5Z [1,0]<stdout>:", "[pod/p/c] 2024-05-01T12:00:00Z 12: "} {
		for _, eol := range []string{"\n", "\r\n"} {
			lines := strings.SplitAfter(strings.TrimSuffix(data, "\n"), "\n")
			for i := range lines {
				lines[i] = label + strings.TrimSuffix(lines[i], "\n")
			}
			got, err := ParseText(strings.NewReader(strings.Join(lines, eol)+eol), "labelled")
			assert.NilError(t, err)
			assert.DeepEqual(t, got, want)
		}
	}
}

// TestParseTextInterleavedRow checks a row whose first columns were
// followed by an NCCL INFO line of another thread before its line end
// (made of the first row and an INFO line of the real NCCL_DEBUG=INFO run):
// the row is lost, and a warning says so.
func TestParseTextInterleavedRow(t *testing.T) {
	data := string(ntTestdata(t, "h200x2-variants/info.txt"))
	row := "           8             2     float     sum      -1    16.25    0.00    0.00       0    16.36    0.00    0.00       0\n"
	info := "vm:1199:1217 [1] NCCL INFO Connected all rings, use ring PXN 0 GDR 1\n"
	assert.Assert(t, strings.Contains(data, row))
	assert.Assert(t, strings.Contains(data, info))
	glued := strings.Replace(data, row, row[:len("           8             2     float     sum      -1")]+info, 1)
	o, err := ParseText(strings.NewReader(glued), "glued")
	assert.NilError(t, err)
	assert.Equal(t, len(o.Rows), 17)
	assert.DeepEqual(t, o.Warnings, []Diag{{Line: 137, Text: "result row interrupted by an NCCL log line, row lost: 8             2     float     sum      -1vm:1199:1217 [1] NCCL INFO Connected all rings, use ring PXN 0 GDR 1"}})
}

// TestParseTextDiagCap checks that Warnings do not grow without bound: a
// real NCCL WARN line repeated 1500 times.
func TestParseTextDiagCap(t *testing.T) {
	warn := "[2026-11-30 06:20:33] vm:1223:1223 [0] bootstrap.cc:114 NCCL WARN Bootstrap : no socket interface found\n"
	assert.Assert(t, strings.Contains(string(ntTestdata(t, "h200x2-variants/noiface.txt")), warn))
	o, err := ParseText(strings.NewReader(strings.Repeat(warn, 1500)), "warns")
	assert.NilError(t, err)
	assert.Equal(t, len(o.Warnings), outputDiagMax+1)
	assert.DeepEqual(t, o.Warnings[outputDiagMax], Diag{Text: "500 more warnings not kept"})
	assert.Equal(t, o.Warnings[999].Line, 1000)
}
