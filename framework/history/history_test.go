package history

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// childEnv makes the test binary a writer process: it imports the folder
// named in childDirEnv into the store named in childEnv and exits, so that
// the concurrency test runs separate processes, as several gpuaccept
// commands on one host would.
const (
	childEnv    = "GPUACCEPT_HISTORY_TEST_STORE"
	childDirEnv = "GPUACCEPT_HISTORY_TEST_DIR"
)

func TestMain(m *testing.M) {
	if loc := os.Getenv(childEnv); loc != "" {
		if err := Append(context.Background(), loc, os.Getenv(childDirEnv)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// trust is a Verifier that finds nothing: these tests are of the store,
// and their folders are real ones, some re-sealed by moved; the command's
// verify is tested in cmd/gpuaccept (TestHistoryForged).
func trust(context.Context, string) error { return nil }

// h100 is the recordings of one H100 (testdata/recordings/h100x1-2026-12-07).
const h100 = "../../testdata/recordings/h100x1-2026-12-07"

// The GPUs of the recordings' hardware.json: issue 30's runs were on one
// H100, issue 32's on another.
const (
	serial30 = "1651624103756"
	serial32 = "1654123047984"
)

// store is one kind of store the tests run on: new opens a fresh, empty
// one and returns its --history location.
type store struct {
	name string
	new  func(t testing.TB) string
}

// stores are SQLite (always) and PostgreSQL (with the testenv service
// "postgres": GPUACCEPT_TEST_POSTGRES).
func stores() []store {
	return []store{
		{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "state", "history.db") }},
		{"postgres", newPostgres},
	}
}

// newPostgres makes a database of its own for t on the testenv server,
// dropped when t ends, and returns its URL.
func newPostgres(t testing.TB) string {
	t.Helper()
	admin := testenv.NeedPostgres(t)
	db, err := sql.Open("pgx", admin)
	assert.NilError(t, err)
	t.Cleanup(func() { db.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "history_test_" + hex.EncodeToString(b[:])
	_, err = db.Exec("CREATE DATABASE " + name)
	assert.NilError(t, err, "create a database on %s", redactURL(admin))
	t.Cleanup(func() { _, _ = db.Exec("DROP DATABASE " + name + " WITH (FORCE)") })
	base, query, _ := strings.Cut(admin, "?")
	base = base[:strings.LastIndexByte(base, '/')+1] + name
	if query != "" {
		base += "?" + query
	}
	return base
}

func open(t testing.TB, loc string) Store {
	t.Helper()
	s, err := Open(context.Background(), loc)
	assert.NilError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func count(t testing.TB, s Store) (runs, points int) {
	t.Helper()
	rs, err := s.Runs(context.Background())
	assert.NilError(t, err)
	ps, err := s.Points(context.Background(), Filter{})
	assert.NilError(t, err)
	return len(rs), len(ps)
}

// Migrations run up from an empty store, each once, and a second Open
// applies none again.
func TestMigrationsFromEmpty(t *testing.T) {
	ms, err := migrations(false)
	assert.NilError(t, err)
	pms, err := migrations(true)
	assert.NilError(t, err)
	assert.Equal(t, len(ms), len(pms), "both databases have every migration")
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			loc := st.new(t)
			s := open(t, loc)
			v, err := s.SchemaVersion(context.Background())
			assert.NilError(t, err)
			assert.Equal(t, v, len(ms))
			runs, points := count(t, s)
			assert.Equal(t, runs+points, 0)
			s2 := open(t, loc)
			v2, err := s2.SchemaVersion(context.Background())
			assert.NilError(t, err)
			assert.Equal(t, v2, v)
			if st.name == "sqlite" {
				for _, p := range []string{loc, filepath.Dir(loc)} {
					fi, err := os.Stat(p)
					assert.NilError(t, err)
					want := fs.FileMode(0o600)
					if fi.IsDir() {
						want = 0o700
					}
					assert.Equal(t, fi.Mode().Perm(), want, p)
				}
			}
		})
	}
}

// Eight processes import eight folders into one store at once: every run
// and every point is there after.
func TestConcurrentWriters(t *testing.T) {
	dirs := []string{"issue30/node-1", "issue30/node-2", "issue30/node-3", "issue30/node-4", "issue30/busy-floor", "issue30/idle-floor", "issue32/train-1", "issue32/busy"}
	want := 0
	for _, d := range dirs {
		run, _, err := resultsdir.Load(filepath.Join(h100, d))
		assert.NilError(t, err)
		want += len(PointsOf(run))
	}
	assert.Assert(t, want > 50, "the folders hold %d points", want)
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			loc := st.new(t)
			var wg sync.WaitGroup
			errs := make([]error, len(dirs))
			for i, d := range dirs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.Command(os.Args[0], "-test.run=^$")
					cmd.Env = append(os.Environ(), childEnv+"="+loc, childDirEnv+"="+filepath.Join(h100, d))
					if out, err := cmd.CombinedOutput(); err != nil {
						errs[i] = fmt.Errorf("%s: %w: %s", d, err, out)
					}
				}()
			}
			wg.Wait()
			assert.NilError(t, errors.Join(errs...))
			runs, points := count(t, open(t, loc))
			assert.Equal(t, runs, len(dirs))
			assert.Equal(t, points, want)
		})
	}
}

// Importing a folder twice adds nothing the second time, and says so.
func TestImportTwice(t *testing.T) {
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			s := open(t, st.new(t))
			dir := filepath.Join(h100, "issue30/node-1")
			first, err := Import(context.Background(), s, dir)
			assert.NilError(t, err)
			assert.Assert(t, first.Added)
			assert.Equal(t, first.Points, 9)
			again, err := Import(context.Background(), s, dir)
			assert.NilError(t, err)
			assert.Assert(t, !again.Added)
			assert.Equal(t, again.Digest, first.Digest)
			assert.Assert(t, strings.HasPrefix(again.String(), "skipped "), again.String())
			runs, points := count(t, s)
			assert.Equal(t, runs, 1)
			assert.Equal(t, points, 9)
		})
	}
}

// moved copies the recorded results folder src into a new folder with its
// host "vm" renamed host, and seals it again: the same GPU (its serial in
// hardware.json) seen on another node, as after an RMA swap.
func moved(t testing.TB, src, host string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), filepath.Base(src))
	assert.NilError(t, os.CopyFS(dir, os.DirFS(src)))
	for _, f := range []string{"journal.jsonl", "results.json", "hardware.json"} {
		p := filepath.Join(dir, f)
		data, err := os.ReadFile(p)
		assert.NilError(t, err)
		assert.Assert(t, bytes.Contains(data, []byte(`"vm"`)), "%s names no host vm", p)
		assert.NilError(t, os.WriteFile(p, bytes.ReplaceAll(data, []byte(`"vm"`), []byte(`"`+host+`"`)), 0o644))
	}
	m, err := manifest.Read(dir)
	assert.NilError(t, err)
	assert.NilError(t, os.Remove(filepath.Join(dir, "manifest.json")))
	_, err = manifest.Write(dir, m.Version, m.SKU)
	assert.NilError(t, err)
	return dir
}

// A GPU that moved to another host keeps its history: by serial, its
// points span both hosts, and its drift is against its acceptance on the
// first.
func TestMovedGPUKeepsHistory(t *testing.T) {
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			s := open(t, st.new(t))
			for _, d := range []string{filepath.Join(h100, "issue30/node-1"), moved(t, filepath.Join(h100, "issue30/node-4"), "node17")} {
				_, err := Import(context.Background(), s, d)
				assert.NilError(t, err)
			}
			ps, err := s.Points(context.Background(), Filter{GPU: serial30})
			assert.NilError(t, err)
			hosts := map[string]int{}
			for _, p := range ps {
				hosts[p.Host]++
			}
			assert.DeepEqual(t, hosts, map[string]int{"vm": 9, "node17": 9})
			lines, err := Drift(context.Background(), s, Filter{GPU: serial30, Test: "gemm.matmul"})
			assert.NilError(t, err)
			assert.Equal(t, len(lines), 5)
			// bf16: 734.45 on node17 against 773.87 on vm, -5.1%.
			assert.Equal(t, lines[0].String(), "GPU 1651624103756 on node17 (h100): gemm.matmul tflops{dtype=bf16,mode=alone} 734.5 TFLOPS, -5.1% since its acceptance on 2026-12-07")
		})
	}
}

// The recorded runs import, their GPU serials show in history, and a
// run on a busy GPU shows its drift against the healthy run before it.
func TestRecordings(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir("../../testdata/recordings", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "manifest.json" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	assert.NilError(t, err)
	assert.Assert(t, len(dirs) >= 30, "found %d recorded results folders", len(dirs))
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			s := open(t, st.new(t))
			var failed []string
			for _, d := range dirs {
				if _, err := Import(context.Background(), s, d); err != nil {
					failed = append(failed, err.Error())
				}
			}
			assert.DeepEqual(t, failed, []string(nil))
			var table bytes.Buffer
			code, err := Main(context.Background(), Options{By: ByGPU, Format: "table", Store: storeLoc(s)}, nil, &table, &table)
			assert.NilError(t, err)
			assert.Equal(t, code, result.ExitPass)
			for _, serial := range []string{serial30, serial32} {
				assert.Assert(t, strings.Contains(table.String(), "│ "+serial+" "), "history --by gpu shows no GPU %s:\n%s", serial, table.String())
			}
		})
	}
}

// storeLoc is the --history value of an open store.
func storeLoc(s Store) string {
	switch s := s.(type) {
	case *Postgres:
		return s.loc
	case *SQLite:
		return s.loc
	}
	panic("no such store")
}

// A run on a busy GPU (issue 30's busy-reference: a bf16 matmul loop in
// another process) against the same GPU's healthy run before it.
func TestBusyDrift(t *testing.T) {
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			s := open(t, st.new(t))
			for _, d := range []string{"issue30/node-1", "issue30/busy-reference"} {
				_, err := Import(context.Background(), s, filepath.Join(h100, d))
				assert.NilError(t, err)
			}
			var out bytes.Buffer
			code, err := Main(context.Background(), Options{By: ByNode, Format: "table", Store: storeLoc(s), Test: "hbm.bandwidth"}, []string{"drift"}, &out, &out)
			assert.NilError(t, err)
			assert.Equal(t, code, result.ExitPass)
			// copy: 1526.12 busy against 3025.14 healthy.
			assert.Equal(t, out.String(), ""+
				"GPU 1651624103756 on vm (h100): hbm.bandwidth bw{op=copy} at 1 GiB 1526 GB/s, -50% since its acceptance on 2026-12-07\n"+
				"GPU 1651624103756 on vm (h100): hbm.bandwidth bw{op=triad} at 1 GiB 1472 GB/s, -52% since its acceptance on 2026-12-07\n")

			busy, _, err := resultsdir.Load(filepath.Join(h100, "issue30/busy-reference"))
			assert.NilError(t, err)
			busy.Hardware, _, err = resultsdir.ReadHardware(filepath.Join(h100, "issue30/busy-reference"))
			assert.NilError(t, err)
			busy.Dir, _ = filepath.Abs(busy.Dir)
			deltas, err := Compare(context.Background(), s, busy, AgainstAcceptance)
			assert.NilError(t, err)
			var bf16 *Delta
			for k, d := range deltas {
				if k.Test == "gemm.matmul" && strings.Contains(k.Labels, `"bf16"`) {
					bf16 = &d
				}
			}
			assert.Assert(t, bf16 != nil, "no delta for gemm.matmul bf16 in %v", deltas)
			assert.Equal(t, percent(bf16.Change), "-59%")
			assert.Equal(t, len(deltas), 9)

			// The healthy run by its digest, bare: the same figures.
			healthy, err := manifest.Digest(filepath.Join(h100, "issue30/node-1"))
			assert.NilError(t, err)
			byDigest, err := Compare(context.Background(), s, busy, strings.TrimPrefix(healthy, "sha256:"))
			assert.NilError(t, err)
			assert.DeepEqual(t, byDigest, deltas)
			_, err = Compare(context.Background(), s, busy, "yesterday")
			assert.ErrorContains(t, err, "want acceptance, last or a run's digest")
		})
	}
}

func TestDriftLineText(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		line DriftLine
		want string
	}{
		{"a NIC, the issue's example", DriftLine{Part: Part{"nic", "0xa088c20300a1b2c3", "mlx5_3"}, Host: "node17", Test: "ibperf.ib_write_bw", Metric: "bw_avg",
			Size: 8 << 20, Unit: "Gb/s", First: 396.7, FirstAt: at, Accepted: true, Last: 361, Change: 361/396.7 - 1},
			"mlx5_3 on node17: ibperf.ib_write_bw bw_avg at 8 MiB 361 Gb/s, -9% since its acceptance on 2026-12-01"},
		{"a node never accepted", DriftLine{Part: Part{"node", "n1", "node n1"}, Host: "n1", Test: "nccl.all_reduce", Metric: "busbw",
			Labels: map[string]string{"placement": "in-place"}, Unit: "GB/s", FirstAt: at, Last: 3.14159, Change: 0.004},
			"node n1: nccl.all_reduce busbw{placement=in-place} 3.142 GB/s, +0.4% since its first run (not accepted) on 2026-12-01"},
		{"a node of a SKU and GPU model", DriftLine{Part: Part{"node", "vm", "node vm"}, SKU: "h200", GPUModel: "NVIDIA H200", Host: "vm", Test: "gemm.matmul", Metric: "tflops",
			Unit: "TFLOPS", FirstAt: at, Accepted: true, Last: 700, Change: -0.05},
			"node vm (h200, NVIDIA H200): gemm.matmul tflops 700 TFLOPS, -5% since its acceptance on 2026-12-01"},
		{"a GPU of a SKU: its model is its serial's", DriftLine{Part: Part{"gpu", "S", "GPU S"}, SKU: "h100", GPUModel: "NVIDIA H100 80GB HBM3", Host: "vm", Test: "hbm.bandwidth", Metric: "bw",
			Unit: "GB/s", FirstAt: at, Accepted: true, Last: 3000},
			"GPU S on vm (h100): hbm.bandwidth bw 3000 GB/s, +0% since its acceptance on 2026-12-01"},
		{"a change that rounds to none", DriftLine{Part: Part{"gpu", "S", "GPU S"}, Test: "hbm.bandwidth", Metric: "bw", Unit: "GB/s", FirstAt: at, Accepted: true, Last: 3091, Change: -0.0004},
			"GPU S: hbm.bandwidth bw 3091 GB/s, +0% since its acceptance on 2026-12-01"},
		{"no change", DriftLine{Part: Part{"gpu", "S", "GPU S"}, Test: "hbm.bandwidth", Metric: "bw", Unit: "GB/s", FirstAt: at, Accepted: true, Last: 3000},
			"GPU S: hbm.bandwidth bw 3000 GB/s, +0% since its acceptance on 2026-12-01"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.line.String(), c.want)
		})
	}
}

// What must not be imported or opened is refused, naming why.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.db")
	assert.NilError(t, os.WriteFile(target, nil, 0o600))
	link := filepath.Join(dir, "history.db")
	assert.NilError(t, os.Symlink(target, link))
	_, err := Open(context.Background(), link)
	assert.Assert(t, errors.Is(err, safefs.ErrRefused), "a link at the store's path: %v", err)

	s := open(t, filepath.Join(dir, "ok.db"))
	unsealed := filepath.Join(dir, "unsealed")
	assert.NilError(t, os.CopyFS(unsealed, os.DirFS(filepath.Join(h100, "issue30/node-1"))))
	assert.NilError(t, os.Remove(filepath.Join(unsealed, "manifest.json")))
	_, err = Import(context.Background(), s, unsealed)
	assert.ErrorContains(t, err, "not a sealed results folder")

	edited := moved(t, filepath.Join(h100, "issue30/node-1"), "n2")
	assert.NilError(t, os.WriteFile(filepath.Join(edited, "hardware.json"), []byte(`{"devices":[]}`), 0o644))
	_, err = Import(context.Background(), s, edited)
	assert.ErrorContains(t, err, "hardware.json: edited since the run")
	runs, _ := count(t, s)
	assert.Equal(t, runs, 0)

	_, err = Open(context.Background(), Off)
	assert.Assert(t, errors.Is(err, ErrOff))
	assert.NilError(t, Append(context.Background(), Off, unsealed), "history off records nothing and says nothing")
}

// A store that cannot be reached gives an error to print, soon, and the
// folder to import later.
func TestAppendUnreachable(t *testing.T) {
	cases := []struct{ name, loc, want string }{
		{"postgres refusing connections", "postgres://u@127.0.0.1:1/db?connect_timeout=5&sslmode=disable", "127.0.0.1"},
		{"sqlite under a file", filepath.Join(h100, "issue30/node-1/results.json/history.db"), "not a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			err := Append(context.Background(), c.loc, filepath.Join(h100, "issue30/node-1"))
			assert.ErrorContains(t, err, "gpuaccept history import")
			assert.ErrorContains(t, err, c.want)
			assert.Assert(t, time.Since(start) < 30*time.Second)
		})
	}
}

// The table, JSON and HTML of gpuaccept history.
func TestShow(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "h.db")
	var out bytes.Buffer
	code, err := Main(context.Background(), Options{By: ByNode, Format: "table", Store: loc, Verify: trust}, []string{"import", filepath.Join(h100, "issue32/train-1"), filepath.Join(h100, "issue32/busy")}, &out, &out)
	assert.NilError(t, err)
	assert.Equal(t, code, result.ExitPass)
	assert.Equal(t, strings.Count(out.String(), "imported "), 2, out.String())
	for _, c := range []struct{ format, want string }{
		{"json", `"gpu_serial": "` + serial32 + `"`},
		{"html", "<svg"},
		{"table", "train.gpu"},
	} {
		out.Reset()
		code, err := Main(context.Background(), Options{By: ByGPU, Format: c.format, Store: loc, GPU: serial32}, nil, &out, &out)
		assert.NilError(t, err)
		assert.Equal(t, code, result.ExitPass)
		assert.Assert(t, strings.Contains(out.String(), c.want), "%s: %s", c.format, out.String())
	}
	for _, args := range [][]string{nil, {"drift"}} {
		out.Reset()
		code, err := Main(context.Background(), Options{By: ByGPU, Format: "json", Store: loc, Host: "nosuchhost"}, args, &out, &out)
		assert.NilError(t, err)
		assert.Equal(t, code, result.ExitPass)
		assert.Equal(t, out.String(), "[]\n", "nothing selected is an empty list for scripts, not null")
	}
	for _, bad := range []Options{{By: "rack", Format: "table"}, {By: ByGPU, Format: "csv"}} {
		code, err := Main(context.Background(), bad, nil, &out, &out)
		assert.Equal(t, code, result.ExitUsage)
		assert.Assert(t, err != nil)
	}
}

// How a point finds its host, GPU and NIC: from its labels and the
// devices of that host, a key left empty where the outputs do not say.
// The NIC's name and GUID are those a real ibstat printed (plugins/health
// testdata: mlx5_0, node GUID 0x00155dfffe3411eb).
func TestPointsOfHardware(t *testing.T) {
	gpuA := result.Device{Host: "n1", Kind: result.GPUDevice, UUID: "GPU-7f9ee361-df4c-fbf8-f54f-326008e9c35c", Serial: serial30, BusID: "00000000:00:06.0"}
	gpuB := result.Device{Host: "n1", Kind: result.GPUDevice, UUID: "GPU-9f772a7a-dd7a-ccae-5ec0-32c40aaef8cb", Serial: serial32, BusID: "00000000:00:07.0"}
	nic := result.Device{Host: "n1", Kind: result.NICDevice, Name: "mlx5_0", GUID: "0x00155dfffe3411eb"}
	one := plan.Scope{Nodes: 1, GPUsPerNode: 1}
	cases := []struct {
		name    string
		hosts   []string
		devices []result.Device
		scope   plan.Scope
		labels  map[string]string
		want    Point
	}{
		{"one GPU, no label: the test ran on it", nil, []result.Device{gpuA}, one, nil,
			Point{Host: "n1", GPUUUID: gpuA.UUID, GPUSerial: serial30}},
		{"an index on a host of two GPUs names none", nil, []result.Device{gpuA, gpuB}, plan.Scope{Nodes: 1, GPUsPerNode: 2}, map[string]string{"host": "n1", "gpu": "1"},
			Point{Host: "n1"}},
		{"a UUID label names its GPU", nil, []result.Device{gpuA, gpuB}, plan.Scope{Nodes: 1, GPUsPerNode: 2}, map[string]string{"gpu": gpuB.UUID},
			Point{Host: "n1", GPUUUID: gpuB.UUID, GPUSerial: serial32}},
		{"a device without a host is the single node's", []string{"n7"}, []result.Device{{Kind: result.GPUDevice, Serial: serial30}}, one, nil,
			Point{Host: "n7", GPUSerial: serial30}},
		{"an hca label names its NIC", nil, []result.Device{gpuA, nic}, plan.Scope{Nodes: 2, GPUsPerNode: 1}, map[string]string{"host": "n1", "hca": "mlx5_0"},
			Point{Host: "n1", NIC: "mlx5_0", NICGUID: nic.GUID}},
		{"a pair names two NICs, no GUID", nil, []result.Device{nic}, plan.Scope{Nodes: 2, GPUsPerNode: 1}, map[string]string{"pair": "mlx5_0:mlx5_0"},
			Point{NIC: "mlx5_0:mlx5_0"}},
		{"two hosts and no host label: none", []string{"n1", "n2"}, []result.Device{gpuA}, plan.Scope{Nodes: 2, GPUsPerNode: 1}, nil,
			Point{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := &result.Run{Hosts: c.hosts, Scope: c.scope, Hardware: c.devices, Tests: []result.Test{{Name: "t.t", Scope: c.scope,
				Metrics: []result.Judged{{Metric: result.Metric{Name: "m", Value: 1, Labels: c.labels}, Status: result.Pass}}}}}
			ps := PointsOf(run)
			assert.Equal(t, len(ps), 1)
			got := ps[0]
			assert.DeepEqual(t, [5]string{got.Host, got.GPUUUID, got.GPUSerial, got.NIC, got.NICGUID},
				[5]string{c.want.Host, c.want.GPUUUID, c.want.GPUSerial, c.want.NIC, c.want.NICGUID})
		})
	}
}

// A GPU's, a NIC's, a host's and a test's trend are read through their
// index, not a scan of every point (the benchmark's 10^6 points: a scan
// takes a second, the index milliseconds).
func TestTrendsUseIndexes(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "h.db")).(*SQLite)
	cases := []struct {
		f     Filter
		index string
	}{
		{Filter{GPU: serial30, Test: "nccl.all_reduce", Metric: "busbw"}, "points_by_serial"},
		{Filter{GPU: "GPU-7f9ee361-df4c-fbf8-f54f-326008e9c35c"}, "points_by_uuid"},
		{Filter{NIC: "0x00155dfffe3411eb", Test: "ibperf.ib_write_bw"}, "points_by_nic"},
		{Filter{Host: "node17"}, "points_by_host"},
		{Filter{Test: "hbm.bandwidth"}, "points_by_test"},
	}
	for _, c := range cases {
		query, args := pointsQuery(c.f)
		rows, err := s.db.Query("EXPLAIN QUERY PLAN "+query, args...)
		assert.NilError(t, err)
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			assert.NilError(t, rows.Scan(&id, &parent, &unused, &detail))
			plan = append(plan, detail)
		}
		assert.NilError(t, rows.Err())
		rows.Close()
		assert.Assert(t, strings.Contains(strings.Join(plan, "\n"), "INDEX "+c.index), "%+v: %s", c.f, strings.Join(plan, "; "))
	}
}

// Recordings of every kind of machine are of host "vm": an H100 node run
// and an H200 one (neither with a hardware.json, so their points are the
// node's) are two series each, never one drifting into the other.
func TestDriftKeepsSKUsApart(t *testing.T) {
	h200 := "../../testdata/recordings/h200x1-2026-12-01/node"
	s := open(t, filepath.Join(t.TempDir(), "h.db"))
	ctx := context.Background()
	sku := map[string]string{}
	for _, d := range []string{h100 + "/issue28/node-1", h200 + "/node-1", h100 + "/issue28/node-2", h200 + "/node-2"} {
		ims, err := ImportVerified(ctx, s, d, trust)
		assert.NilError(t, err)
		assert.Equal(t, len(ims), 1)
		assert.Assert(t, ims[0].NoHardware && strings.Contains(ims[0].String(), "no GPU serial: the folder has no hardware.json"), ims[0].String())
	}
	runs, err := s.Runs(ctx)
	assert.NilError(t, err)
	for _, r := range runs {
		sku[r.Digest] = r.SKU
	}
	lines, err := Drift(ctx, s, Filter{Test: "gemm.matmul"})
	assert.NilError(t, err)
	seen := map[string]bool{}
	for _, l := range lines {
		assert.Equal(t, l.Part, Part{"node", "vm", "node vm"})
		assert.Equal(t, sku[l.FirstRun], l.SKU, "%s", l)
		assert.Equal(t, sku[l.LastRun], l.SKU, "%s", l)
		seen[l.SKU] = true
	}
	// Both SKUs measured node vm's gemm: one store line per SKU, not one
	// across them.
	assert.DeepEqual(t, seen, map[string]bool{"h100-sxm": true, "h200": true})
}

// What ImportVerified imports: a folder its verifier passes; none that it
// refuses (the error names the folder and the verifier's words), none
// without a verifier; each cycle of a burn-in, a cycle killed before it
// wrote anything skipped.
func TestImportVerified(t *testing.T) {
	ctx := context.Background()
	one := h100 + "/issue30/node-4"
	refuse := func(_ context.Context, dir string) error { return errors.New("2 findings") }
	for _, c := range []struct {
		name   string
		verify Verifier
		want   string
	}{{"refused", refuse, "node-4: 2 findings"}, {"no verifier", nil, "no verifier"}} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t, filepath.Join(t.TempDir(), "h.db"))
			ims, err := ImportVerified(ctx, s, one, c.verify)
			assert.ErrorContains(t, err, c.want)
			assert.Equal(t, len(ims), 0)
			runs, points := count(t, s)
			assert.Equal(t, runs+points, 0)
		})
	}
	t.Run("burn-in", func(t *testing.T) {
		// A burn-in folder as framework/burnin leaves it: burnin.json and
		// cycle-NNNN/ results folders, the last killed as it began.
		dir := t.TempDir()
		assert.NilError(t, os.WriteFile(filepath.Join(dir, "burnin.json"), []byte("{}\n"), 0o644))
		for i, src := range []string{one, h100 + "/issue30/busy-floor"} {
			assert.NilError(t, os.CopyFS(filepath.Join(dir, fmt.Sprintf("cycle-%04d", i+1)), os.DirFS(src)))
		}
		assert.NilError(t, os.Mkdir(filepath.Join(dir, "cycle-0003"), 0o755))
		var verified []string
		verify := func(_ context.Context, d string) error { verified = append(verified, filepath.Base(d)); return nil }
		s := open(t, filepath.Join(t.TempDir(), "h.db"))
		ims, err := ImportVerified(ctx, s, dir, verify)
		assert.NilError(t, err)
		assert.DeepEqual(t, verified, []string{"cycle-0001", "cycle-0002"})
		assert.Equal(t, len(ims), 3)
		assert.Assert(t, ims[0].Added && ims[1].Added && ims[2].Unstarted, "%v", ims)
		assert.Assert(t, strings.HasPrefix(ims[2].String(), "skipped ") && strings.HasSuffix(ims[2].String(), "cycle-0003: a burn-in cycle killed before it wrote anything"), ims[2].String())
		runs, points := count(t, s)
		assert.Equal(t, runs, 2)
		assert.Equal(t, points, ims[0].Points+ims[1].Points)
	})
}

// gpuaccept history lists the latest point of each part and series unless
// --all, and says so; --by nic with no NIC says no point matches; drift
// --by gpu keeps the GPUs' lines.
func TestLatestAndBy(t *testing.T) {
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "h.db")
	var out bytes.Buffer
	code, err := Main(ctx, Options{By: ByNode, Format: "table", Store: loc, Verify: trust},
		[]string{"import", h100 + "/issue30/node-4", h100 + "/issue30/busy-floor", h100 + "/issue28/node-1", h100 + "/issue28/node-2"}, &out, &out)
	assert.NilError(t, err, out.String())
	assert.Equal(t, code, result.ExitPass)
	s := open(t, loc)
	all, err := s.Points(ctx, Filter{})
	assert.NilError(t, err)
	latest := Latest(all)
	assert.Assert(t, len(latest) < len(all), "%d of %d", len(latest), len(all))
	// Every series' latest point, once: no two of one key, and the one
	// kept is the newest of its key.
	newest := map[string]Point{}
	for _, p := range all {
		part, _ := PartOf(p)
		newest[seriesOf(part, p)] = p
	}
	assert.Equal(t, len(latest), len(newest))
	for _, p := range latest {
		part, _ := PartOf(p)
		assert.Equal(t, newest[seriesOf(part, p)].Digest, p.Digest)
	}
	for _, c := range []struct {
		o    Options
		args []string
		want string
	}{
		{Options{By: ByNode, Format: "table"}, nil, fmt.Sprintf("The latest value of each part and series: %d rows of %d points", len(latest), len(all))},
		{Options{By: ByNIC, Format: "table"}, nil, "no point in history store " + loc + " matches and names a NIC (--by nic)\n"},
		{Options{By: ByNIC, Format: "table"}, []string{"drift"}, "was measured by two runs or more of one SKU and GPU model (--by nic: of the NICs alone)\n"},
	} {
		out.Reset()
		c.o.Store = loc
		code, err := Main(ctx, c.o, c.args, &out, &out)
		assert.NilError(t, err)
		assert.Equal(t, code, result.ExitPass)
		assert.Assert(t, strings.Contains(out.String(), c.want), out.String())
	}
	out.Reset()
	code, err = Main(ctx, Options{By: ByNode, Format: "table", Store: loc, All: true}, nil, &out, &out)
	assert.NilError(t, err)
	assert.Equal(t, code, result.ExitPass)
	assert.Assert(t, !strings.Contains(out.String(), "The latest value"), out.String())
	assert.Equal(t, strings.Count(out.String(), "│ vm "), len(all))

	lines, err := Drift(ctx, s, Filter{})
	assert.NilError(t, err)
	gpus := ByDrift(lines, ByGPU)
	assert.Assert(t, len(gpus) > 0 && len(gpus) < len(lines), "%d of %d", len(gpus), len(lines))
	for _, l := range gpus {
		assert.Equal(t, l.Part.Kind, "gpu")
	}
	byTest := ByDrift(lines, ByTest)
	assert.Equal(t, len(byTest), len(lines))
	for i := 1; i < len(byTest); i++ {
		assert.Assert(t, byTest[i-1].Test <= byTest[i].Test)
	}
}
