package rccl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
)

// seed is the replay folder made of seed 004's recorded outputs
// (testdata/recordings/mi355x-seed004/README.md says which lines).
const seed = "../../testdata/recordings/mi355x-seed004/"

var (
	oneNode  = plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 8}}
	twoNodes = plan.Topology{Scope: plan.Scope{Nodes: 2, GPUsPerNode: 8}}
)

// The seed's two command lines: one process driving 8 GPUs, and mpirun
// -np 16 -g 1 with the AINIC settings passed as environment.
func TestPlan(t *testing.T) {
	for _, c := range []struct {
		name   string
		test   string
		topo   plan.Topology
		params map[string]string
		want   plan.Step
	}{
		{"single node as in seed 004 T5", "all_reduce", oneNode, map[string]string{"bindir": "./build", "minbytes": "4", "maxbytes": "1G", "report": "none"},
			plan.Step{Name: "all_reduce", Argv: []string{"build/all_reduce_perf", "-b", "4", "-e", "1G", "-f", "2", "-g", "8", "-c", "1"}, Procs: 1, ProcsPerNode: 1}},
		{"two nodes with AINIC env as in seed 004 T11", "all_reduce", twoNodes,
			map[string]string{"minbytes": "16", "maxbytes": "16G", "iters": "20", "warmup": "5", "env.NCCL_IB_GID_INDEX": "1", "env.NCCL_IB_HCA": "ionic_0,ionic_1"},
			plan.Step{Name: "all_reduce", Argv: []string{"all_reduce_perf", "-b", "16", "-e", "16G", "-f", "2", "-g", "1", "-c", "1", "-n", "20", "-w", "5", "-x", "all_reduce.json", "-Z", "json"},
				Env: map[string]string{"NCCL_IB_GID_INDEX": "1", "NCCL_IB_HCA": "ionic_0,ionic_1"}, Procs: 16, ProcsPerNode: 8, MPI: true, Files: []string{"all_reduce.json"}}},
		{"in-place only, cycles, later report flag", "alltoall", oneNode, map[string]string{"outofplace": "0", "cycles": "3", "report_flag": "-X"},
			plan.Step{Name: "alltoall", Argv: []string{"alltoall_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "8", "-c", "1", "-O", "0", "-N", "3", "-X", "alltoall.json", "-Z", "json"},
				Procs: 1, ProcsPerNode: 1, Files: []string{"alltoall.json"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: c.test, Params: c.params, Topology: c.topo})
			assert.NilError(t, err)
			assert.NilError(t, p.Validate())
			assert.DeepEqual(t, p.Steps, []plan.Step{c.want})
		})
	}
}

func TestPlanErrors(t *testing.T) {
	for _, c := range []struct {
		test   string
		params map[string]string
		want   string
	}{
		{"all_reducer", nil, "unknown test rccl.all_reducer"},
		{"all_reduce", map[string]string{"maxbytes": "lots"}, "parameter maxbytes"},
		{"all_reduce", map[string]string{"outofplace": "2"}, "parameter outofplace"},
		{"all_reduce", map[string]string{"report": "csv"}, "parameter report"},
		{"all_reduce", map[string]string{"env.": "x"}, "not a variable name"},
		{"all_reduce", map[string]string{"nccl": "x"}, `unknown parameter "nccl"`},
	} {
		_, err := Plugin{}.Plan(context.Background(), pluginapi.PlanRequest{Test: c.test, Params: c.params, Topology: oneNode})
		assert.ErrorContains(t, err, c.want)
	}
}

func parse(t *testing.T, test string, topo plan.Topology, outs ...plan.Output) result.Parsed {
	t.Helper()
	p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: test, Topology: topo, Outputs: outs})
	assert.NilError(t, err)
	return p
}

func check(p result.Parsed, name string) *result.Check {
	for i := range p.Checks {
		if p.Checks[i].Name == name {
			return &p.Checks[i]
		}
	}
	return nil
}

func busbwAt(p result.Parsed, size int64, placement string) float64 {
	for _, m := range p.Metrics {
		if m.Name == "busbw" && m.Size == size && m.Labels["placement"] == placement {
			return m.Value
		}
	}
	return -1
}

// render writes what Parse found, one fact a line, for golden files.
func render(p result.Parsed) string {
	var b strings.Builder
	fmt.Fprintf(&b, "error: %q\n", p.Error)
	keys := make([]string, 0, len(p.Info))
	for k := range p.Info {
		// The hardware list is the framework's, not the verdict's
		// (result.HardwareInfo): nccltests' TestDevicesOfRankLines holds it.
		if k != result.HardwareInfo {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "info %s: %s\n", k, p.Info[k])
	}
	for _, c := range p.Checks {
		fmt.Fprintf(&b, "check %s: ok=%v warn=%v %s\n", c.Name, c.OK, c.Warn, c.Message)
	}
	for _, d := range p.Diagnostics {
		fmt.Fprintf(&b, "diag %s %s: %s\n", d.Level, d.Source, d.Message)
	}
	for _, m := range p.Metrics {
		ls := make([]string, 0, len(m.Labels))
		for k, v := range m.Labels {
			ls = append(ls, k+"="+v)
		}
		sort.Strings(ls)
		fmt.Fprintf(&b, "%s %d %g %s %s\n", m.Name, m.Size, m.Value, m.Unit, strings.Join(ls, ","))
	}
	return b.String()
}

// Every rccl-tests output of seed 004 (T5, T6, T11, T12), and the outputs
// of public issues under testdata/issues (README there gives the source).
func TestParseGolden(t *testing.T) {
	for _, c := range []struct {
		golden, test, log string
		topo              plan.Topology
	}{
		{"seed004-T5-all_reduce-1x8", "all_reduce", seed + "singlenode/raw/rccl.all_reduce/all_reduce.log", oneNode},
		{"seed004-T6-alltoall-1x8", "alltoall", seed + "singlenode/raw/rccl.alltoall/alltoall.log", oneNode},
		{"seed004-T11-all_reduce-2x8", "all_reduce", seed + "multinode/raw/rccl.all_reduce/all_reduce.log", twoNodes},
		{"seed004-T12-alltoall-2x8", "alltoall", seed + "multinode/raw/rccl.alltoall/alltoall.log", twoNodes},
	} {
		t.Run(c.golden, func(t *testing.T) {
			p := parse(t, c.test, c.topo, plan.Output{Step: c.test, Log: c.log})
			assert.Equal(t, p.Error, "")
			golden.Assert(t, render(p), c.golden+".golden")
		})
	}
}

func TestParseSeedValues(t *testing.T) {
	p := parse(t, "all_reduce", oneNode, plan.Output{Step: "all_reduce", Log: seed + "singlenode/raw/rccl.all_reduce/all_reduce.log"})
	assert.Equal(t, busbwAt(p, 1<<30, "out-of-place"), 402.55)
	assert.Equal(t, busbwAt(p, 1<<30, "in-place"), 401.90)
	assert.Equal(t, p.Info["device"], "AMD Radeon Graphics", "HIP's generic name names no model")
	assert.Equal(t, p.Info["gpu"], "")
	assert.Equal(t, p.Info["rccl_version"], "2.27.7")

	p = parse(t, "alltoall", twoNodes, plan.Output{Step: "alltoall", Log: seed + "multinode/raw/rccl.alltoall/alltoall.log"})
	assert.Equal(t, busbwAt(p, 16<<30, "in-place"), 91.10)
	assert.Equal(t, p.Info["rccl_version"], "2.27.7-HEAD:96a25b5", "from the \"RCCL version :\" line, which names the build")
	assert.Equal(t, p.Info["rocm_version"], "7.2.2.0-86-671d39a71e")
	assert.Equal(t, p.Info["hosts"], "Aliyun3,Aliyun1")
	assert.Equal(t, check(p, "data validation").OK, true, "alltoall in-place #wrong N/A, out-of-place 0")
}

func edited(t *testing.T, src, name string, edit func(string) string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	assert.NilError(t, err)
	out := edit(string(data))
	assert.Assert(t, out != string(data), "the edit changed nothing")
	p := filepath.Join(t.TempDir(), name)
	assert.NilError(t, os.WriteFile(p, []byte(out), 0o644))
	return p
}

var rowRE = regexp.MustCompile(`(?m)^(\d+) (\d+) (\S+) (\S+) (-?\d+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+) (\S+)$`)

// rccl-tests' own shapes, made from the seed's real outputs: the version
// line without '#', rank lines without Group and with full bus ids (as
// rccl-tests before 2.13 printed them), -O 0 (in-place block only),
// "# Reducing maxBytes" and stress cycles ("# Testing 2 cycle." and the
// sweep again).
func TestRCCLShapes(t *testing.T) {
	src := seed + "singlenode/raw/rccl.all_reduce/all_reduce.log"
	t.Run("version line without #", func(t *testing.T) {
		log := edited(t, src, "a.log", func(s string) string { return strings.TrimPrefix(s, "# ") })
		p := parse(t, "all_reduce", oneNode, plan.Output{Step: "all_reduce", Log: log})
		assert.Equal(t, p.Info["rccl_tests_version"], "2.17.9-develop:2596ca5f71")
		assert.Equal(t, p.Info["rccl_version"], "2.27.7")
	})
	t.Run("rank lines without Group, full bus ids", func(t *testing.T) {
		log := edited(t, src, "a.log", func(s string) string {
			s = regexp.MustCompile(` Group 0`).ReplaceAllString(s, "")
			return regexp.MustCompile(`\[(0000:[0-9a-f]{2}:00)\]`).ReplaceAllString(s, "[$1.0]")
		})
		p := parse(t, "all_reduce", oneNode, plan.Output{Step: "all_reduce", Log: log})
		assert.Equal(t, p.Error, "")
		assert.Equal(t, check(p, "rank count").OK, true)
		assert.Equal(t, p.Info["ranks"], "8")
	})
	t.Run("-O 0: in-place only", func(t *testing.T) {
		log := edited(t, src, "a.log", func(s string) string {
			s = strings.Replace(s, "# out-of-place in-place\n", "# in-place\n", 1)
			s = strings.Replace(s, "time algbw busbw #wrong time algbw busbw #wrong", "time algbw busbw #wrong", 1)
			s = strings.Replace(s, "(us) (GB/s) (GB/s) (us) (GB/s) (GB/s)", "(us) (GB/s) (GB/s)", 1)
			return rowRE.ReplaceAllString(s, "$1 $2 $3 $4 $5 $10 $11 $12 $13")
		})
		p := parse(t, "all_reduce", oneNode, plan.Output{Step: "all_reduce", Log: log})
		assert.Equal(t, p.Error, "")
		assert.Equal(t, busbwAt(p, 1<<30, "in-place"), 401.90)
		assert.Equal(t, busbwAt(p, 1<<30, "out-of-place"), -1.0)
	})
	t.Run("Reducing maxBytes", func(t *testing.T) {
		log := edited(t, src, "a.log", func(s string) string {
			s = strings.Replace(s, "#\n# Using devices", "#\n# Reducing maxBytes to 536870912 due to memory limitation\n#\n# Using devices", 1)
			return regexp.MustCompile(`(?m)^1073741824 .*\n`).ReplaceAllString(s, "")
		})
		p := parse(t, "all_reduce", oneNode, plan.Output{Step: "all_reduce", Log: log})
		assert.Equal(t, p.Error, "", "the sweep ends where rccl-tests said it would")
	})
	t.Run("stress cycles", func(t *testing.T) {
		// The sweep again as a second cycle, its 1 GiB out-of-place busbw
		// edited to 200.00 in the degraded copy: the point is judged on the
		// worst cycle, with both summarised.
		for _, c := range []struct {
			name       string
			busbw      string // the second cycle's 1 GiB out-of-place busbw; "" as printed
			value, max float64
		}{{"same numbers", "", 402.55, 402.55}, {"second cycle slow", "200.00", 200, 402.55}} {
			t.Run(c.name, func(t *testing.T) {
				log := edited(t, src, "a.log", func(s string) string {
					var rows []string
					for _, m := range rowRE.FindAllStringSubmatch(s, -1) {
						if m[1] == "1073741824" && c.busbw != "" {
							m[8] = c.busbw
						}
						rows = append(rows, strings.Join(m[1:], " "))
					}
					return strings.Replace(s, "# Out of bounds", "# Testing 2 cycle.\n"+strings.Join(rows, "\n")+"\n# Out of bounds", 1)
				})
				p := parse(t, "all_reduce", oneNode, plan.Output{Step: "all_reduce", Log: log})
				assert.Equal(t, p.Error, "")
				var got []result.Metric
				for _, m := range p.Metrics {
					if m.Name == "busbw" && m.Size == 1<<30 && m.Labels["placement"] == "out-of-place" {
						got = append(got, m)
					}
				}
				assert.Equal(t, len(got), 1, "one point for both cycles")
				assert.Equal(t, got[0].Cycles, 2)
				assert.Equal(t, got[0].Value, c.value)
				assert.Equal(t, got[0].Min, c.value)
				assert.Equal(t, got[0].Max, c.max)
				assert.Equal(t, got[0].Median, (c.value+c.max)/2)
			})
		}
	})
}

// Degraded variants of the seed's recordings: each must fail or error.
func TestDegraded(t *testing.T) {
	src := seed + "multinode/raw/rccl.all_reduce/all_reduce.log"
	for _, c := range []struct {
		name  string
		edit  func(string) string
		check string // the failed check, or "" for an error
		want  string
	}{
		{"wrong elements", func(s string) string {
			return strings.Replace(s, "1073741824 268435456 float sum -1 5302.00 202.52 379.72 0", "1073741824 268435456 float sum -1 5302.00 202.52 379.72 12", 1)
		}, "data validation", "12 wrong elements out-of-place at 1 GiB"},
		// Both ranks' halves on one host, as a hostfile naming a node twice
		// gives it. (Cutting a node's rank lines is what pages quoting an
		// output do: the rows still prove 16 ranks, so that is no failure.)
		{"one host for both nodes", func(s string) string {
			return regexp.MustCompile(`(?m)^(# Rank \d+ Group 0 Pid \d+ on )Aliyun1 `).ReplaceAllString(s, "${1}Aliyun3 ")
		}, "node count", "ranks ran on 1 host, expected 2 nodes"},
		{"killed mid-sweep", func(s string) string { return s[:strings.Index(s, "2147483648 536870912")] }, "", "truncated"},
		{"out of bounds", func(s string) string {
			return strings.Replace(s, "# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED", 1)
		}, "out of bounds values", "3 values out of bounds"},
		{"RCCL failure", func(s string) string {
			return strings.Replace(s, "# Out of bounds", "Aliyun1: Test NCCL failure common.cu:1190 'unhandled system error'\n# Out of bounds", 1)
		}, "", "Test NCCL failure"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := edited(t, src, "all_reduce.log", c.edit)
			p := parse(t, "all_reduce", twoNodes, plan.Output{Step: "all_reduce", Log: log})
			if c.check == "" {
				assert.Assert(t, strings.Contains(p.Error, c.want), p.Error)
				return
			}
			ch := check(p, c.check)
			assert.Assert(t, ch != nil && !ch.OK, "%+v", p.Checks)
			assert.Assert(t, strings.Contains(ch.Message, c.want), ch.Message)
		})
	}
}

// The Reporter file, as rccl-tests' src/common.cu writes it, with the
// seed's numbers: one object per size and placement.
func reportOf(t *testing.T, log string) string {
	t.Helper()
	data, err := os.ReadFile(log)
	assert.NilError(t, err)
	var b strings.Builder
	b.WriteString("[\n")
	rows := rowRE.FindAllStringSubmatch(string(data), -1)
	for i, r := range rows {
		for place, off := range []int{6, 10} {
			wrong := r[off+3]
			sep := "},"
			if i == len(rows)-1 && place == 1 {
				sep = "}"
			}
			fmt.Fprintf(&b, `{"numCycle":0, "name":"AllReduce", "nodes":2, "ranks":16, "ranksPerNode":8, "gpusPerRank":1, "size":%s, "type":"%s", "redop":"%s", "inPlace":%d, "time":%s0000, "algBw":%s0000, "busBw":%s0000, "wrong":"%s"%s`+"\n",
				r[1], r[3], r[4], place, r[off], r[off+1], r[off+2], wrong, sep)
		}
	}
	b.WriteString("]\n")
	return b.String()
}

func TestParseReport(t *testing.T) {
	log := seed + "multinode/raw/rccl.all_reduce/all_reduce.log"
	js := filepath.Join(t.TempDir(), "all_reduce.json")
	assert.NilError(t, os.WriteFile(js, []byte(reportOf(t, log)), 0o644))
	p := parse(t, "all_reduce", twoNodes, plan.Output{Step: "all_reduce", Log: log, Files: map[string]string{"all_reduce.json": js}})
	assert.Equal(t, p.Error, "")
	assert.Equal(t, busbwAt(p, 16<<30, "out-of-place"), 385.98)
	assert.Equal(t, check(p, "rank count").OK, true)

	t.Run("disagreeing with the text", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "all_reduce.json")
		assert.NilError(t, os.WriteFile(bad, []byte(strings.Replace(reportOf(t, log), `"busBw":385.980000`, `"busBw":285.980000`, 1)), 0o644))
		p := parse(t, "all_reduce", twoNodes, plan.Output{Step: "all_reduce", Log: log, Files: map[string]string{"all_reduce.json": bad}})
		assert.Assert(t, strings.Contains(p.Error, "disagree: busbw at 16 GiB is 385.98 in the text, 285.98 in the JSON"), p.Error)
	})
	t.Run("nan and N/A as std::to_string and rccl-tests write them", func(t *testing.T) {
		o, err := ParseReport(strings.NewReader(`[
{"numCycle":0, "name":"AllToAll", "gpus":8, "size":0, "type":"float", "redop":"none", "inPlace":1, "time":0.040000, "algBw":-nan, "busBw":-nan, "wrong":"N/A"},
{"numCycle":0, "name":"AllToAll", "gpus":8, "size":256, "type":"float", "redop":"none", "inPlace":1, "time":37.290000, "algBw":0.010000, "busBw":0.010000, "wrong":"N/A"}
]`), "x.json")
		assert.NilError(t, err)
		assert.Equal(t, len(o.Rows), 1)
		assert.Equal(t, o.Rows[0].InPlace.Wrong, int64(-1))
		assert.Equal(t, o.Collective, "alltoall")
		assert.Equal(t, len(o.Warnings), 1, "the -nan object")
	})
	t.Run("two cycles, the second slow at 16 GiB", func(t *testing.T) {
		one := reportOf(t, log)
		second := strings.ReplaceAll(one, `"numCycle":0`, `"numCycle":1`)
		second = strings.Replace(second, `"busBw":385.980000`, `"busBw":192.990000`, 1)
		both := strings.TrimSuffix(one, "}\n]\n") + "},\n" + strings.TrimPrefix(second, "[\n")
		o1, err := ParseReport(strings.NewReader(one), "one.json")
		assert.NilError(t, err)
		o, err := ParseReport(strings.NewReader(both), "both.json")
		assert.NilError(t, err)
		assert.Equal(t, len(o.Rows), len(o1.Rows), "the second cycle folds into the first")
		r := o.Rows[len(o.Rows)-1]
		assert.Equal(t, r.Size, int64(16<<30))
		assert.Equal(t, r.Cycles, 2)
		assert.Equal(t, r.OutOfPlace.BusBW, 192.99)
		st := r.OutOfPlace.Stats.BusBW
		assert.DeepEqual(t, []float64{float64(st.N), st.Min, st.Median(), st.Max}, []float64{2, 192.99, (192.99 + 385.98) / 2, 385.98})
		assert.Equal(t, r.InPlace.BusBW, o1.Rows[len(o1.Rows)-1].InPlace.BusBW)
	})
	t.Run("cut short", func(t *testing.T) {
		r := reportOf(t, log)
		o, err := ParseReport(strings.NewReader(r[:len(r)/2]), "x.json")
		assert.NilError(t, err)
		assert.Assert(t, len(o.Errors) == 1 && strings.Contains(o.Errors[0].Text, "truncated"))
	})
	t.Run("empty", func(t *testing.T) {
		_, err := ParseReport(strings.NewReader("[\n]\n"), "x.json")
		assert.ErrorContains(t, err, "x.json: no result object")
	})
}

func FuzzParseReport(f *testing.F) {
	f.Add([]byte(`[{"numCycle":0, "name":"AllReduce", "gpus":8, "size":4, "type":"float", "redop":"sum", "inPlace":0, "time":42.020000, "algBw":0.000000, "busBw":0.000000, "wrong":"0"}]`))
	f.Add([]byte(`{"size":-1, "inPlace":1}{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseReport(strings.NewReader(string(data)), "f.json")
		if o == nil {
			t.Fatal("nil output")
		}
		if err == nil && len(o.Rows) == 0 {
			t.Fatal("no rows and no error")
		}
	})
}

// FuzzParse runs the whole Parse on arbitrary logs and reports: it must
// never panic.
func FuzzParse(f *testing.F) {
	for _, p := range []string{seed + "singlenode/raw/rccl.all_reduce/all_reduce.log", seed + "multinode/raw/rccl.alltoall/alltoall.log"} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data, []byte(`[{"size":4, "inPlace":0, "time":1, "algBw":1, "busBw":1, "wrong":"0"}]`))
		}
	}
	f.Fuzz(func(t *testing.T, log, js []byte) {
		dir := t.TempDir()
		lp, jp := filepath.Join(dir, "all_reduce.log"), filepath.Join(dir, "all_reduce.json")
		if os.WriteFile(lp, log, 0o644) != nil || os.WriteFile(jp, js, 0o644) != nil {
			t.Skip()
		}
		p, err := Plugin{}.Parse(context.Background(), pluginapi.ParseRequest{Test: "all_reduce", Topology: oneNode,
			Params:  map[string]string{"maxbytes": "1G"},
			Outputs: []plan.Output{{Step: "all_reduce", Log: lp, Files: map[string]string{"all_reduce.json": jp}}}})
		if err != nil {
			t.Fatal(err)
		}
		if p.Error == "" && len(p.Metrics) == 0 {
			t.Fatal("no error and no metrics")
		}
	})
}

// Outputs quoted in public threads (testdata/issues/README.md): what the
// plugin makes of each, cut-short ones included.
func TestParseIssues(t *testing.T) {
	for _, c := range []struct {
		file, test string
		topo       plan.Topology
		version    string
		err        string
	}{
		{"hpc-ai-envs-pr30-all_reduce-mi300x.txt", "all_reduce", oneNode, "develop:83d38d9", "output ends at 8 MiB but sizes up to 1 GiB were asked for: truncated"},
		{"container-toolkit-pr77-all_reduce-mi300x-head.txt", "all_reduce", oneNode, "develop:5272cd1", "no result rows"},
		{"rccl-pr2078-all_reduce-ainic-tail.txt", "all_reduce", twoNodes, "", ""},
		{"rccl-pr2075-broadcast-gfx1151-tail.txt", "broadcast", oneNode, "", ""},
	} {
		t.Run(c.file, func(t *testing.T) {
			p := parse(t, c.test, c.topo, plan.Output{Step: c.test, Log: "testdata/issues/" + c.file})
			assert.Equal(t, p.Info["rccl_tests_version"], c.version)
			if c.err == "" {
				assert.Equal(t, p.Error, "")
			} else {
				assert.Assert(t, strings.Contains(p.Error, c.err), p.Error)
			}
			golden.Assert(t, render(p), "issues-"+strings.TrimSuffix(c.file, ".txt")+".golden")
		})
	}
	p := parse(t, "all_reduce", oneNode, plan.Output{Step: "all_reduce", Log: "testdata/issues/hpc-ai-envs-pr30-all_reduce-mi300x.txt"})
	assert.Equal(t, p.Info["gpu"], "AMD Instinct MI300X", "a model name, unlike HIP's generic one")
}
