package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
)

// here is a Scheduler whose steps run on this host: the script runs
// inside an "allocation" of this host, each step's ranks are the wrapped
// program itself. It submits nothing.
type here struct{}

func (here) Header(j Job) ([]string, error) { return []string{"# test " + j.Test}, nil }
func (here) NodesCommand() string           { return "hostname" }
func (here) StepStart(_ Job, _ plan.Step, wrapped []string) (string, []string, error) {
	return JoinWithJob(wrapped), []string{"FROM_SCHEDULER=1"}, nil
}
func (here) Submit(context.Context, Job, string) (string, error) {
	return "", errors.New("here submits nothing")
}
func (here) Query(context.Context, string) (State, error) { return State{}, errors.New("no jobs here") }
func (here) Cancel(context.Context, string) error         { return nil }

func testOptions() Options {
	return Options{ScriptFile: "batch-job.sh", OutputFile: "batch-job.out", RanksExt: ".ranks",
		CancelCommand: "cancel", Linger: time.Second, StopGrace: time.Second, KillGrace: time.Second}
}

func sh(name, role, script string) plan.Step {
	return plan.Step{Name: name, Role: role, Argv: []string{"/bin/sh", "-c", script}, Procs: 1, ProcsPerNode: 1}
}

// server prints its readiness line, then runs script.
func server(name, script string) plan.Step {
	s := sh(name, "server", "echo 'Waiting for client to connect'; "+script)
	s.ReadyMarker = "Waiting for client to connect"
	return s
}

// launchHere runs steps through Launch inside this host's "allocation".
func launchHere(t *testing.T, steps ...plan.Step) []plan.Output {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "raw")
	st, err := StagingDir(dir, ".batch")
	assert.NilError(t, err)
	req := launch.Request{Test: "x.seq", Plan: plan.Plan{Steps: steps}, Topology: plan.Topology{Scope: plan.Scope{Nodes: 1, GPUsPerNode: 1}},
		Dir: dir, Timeout: time.Minute}
	outs, err := Launch(context.Background(), req, Job{Test: req.Test, Dir: st, Plan: req.Plan, Topology: req.Topology}, here{}, testOptions())
	assert.NilError(t, err)
	_, err = os.Stat(st)
	assert.Assert(t, os.IsNotExist(err), "staging folder left behind")
	return outs
}

// The script keeps launch.Sequence's rules: the same cases as
// framework/launch's TestSequenceFailures, in bash on this host, with
// the Sequence's own words in each step's LaunchError.
func TestScriptSequence(t *testing.T) {
	const unready = `step server ended before its readiness line "Waiting for client to connect" showed`
	cases := []struct {
		name  string
		steps []plan.Step
		// want is each step's LaunchError, and exit status (-1: none).
		want map[string]string
		code map[string]int
		// within bounds the run: a failure must not wait for the
		// test's timeout.
		within time.Duration
	}{
		{
			name:  "plain steps pass in order",
			steps: []plan.Step{sh("a", "", "echo a >../order"), sh("b", "", `test "$(cat ../order)" = a && test "$FROM_SCHEDULER" = 1`)},
			want:  map[string]string{"a": "", "b": ""},
			code:  map[string]int{"a": 0, "b": 0},
		},
		{
			name:  "a plain step fails: the next does not start",
			steps: []plan.Step{sh("a", "", "exit 2"), sh("b", "", "exit 0")},
			want:  map[string]string{"a": "", "b": "not started: step a failed (exit status 2)"},
			code:  map[string]int{"a": 2, "b": -1},
		},
		{
			// ssh's TestServerDiesBeforeReady and the Sequence's.
			name: "a server ends before its readiness line",
			steps: []plan.Step{{Name: "server", Role: "server", Argv: []string{"/bin/sh", "-c", "exit 1"}, Procs: 1, ProcsPerNode: 1,
				ReadyMarker: "Waiting for client to connect"}, sh("client", "client", "exit 0")},
			want: map[string]string{"server": "", "client": "not started: " + unready},
			code: map[string]int{"server": 1, "client": -1},
		},
		{
			// The same server exiting 0: still a failure, its client
			// had nothing to talk to.
			name: "a server exits 0 before its readiness line",
			steps: []plan.Step{{Name: "server", Role: "server", Argv: []string{"/bin/sh", "-c", "echo starting"}, Procs: 1, ProcsPerNode: 1,
				ReadyMarker: "Waiting for client to connect"}, sh("client", "client", "exit 0")},
			want: map[string]string{"server": "", "client": "not started: " + unready},
			code: map[string]int{"server": 0, "client": -1},
		},
		{
			// The readiness line releases the client; the server ends
			// once its client served it.
			name:  "a server and its client",
			steps: []plan.Step{server("server", "while [ ! -e ../served ]; do sleep 0.1; done"), sh("client", "client", "touch ../served")},
			want:  map[string]string{"server": "", "client": ""},
			code:  map[string]int{"server": 0, "client": 0},
		},
		{
			// Each client waits for the other: they pass only when
			// started together. A client's own timeout bounds them
			// when they are not.
			name: "consecutive clients start together",
			steps: []plan.Step{
				withTimeout(sh("client1", "client", "touch ../c1; while [ ! -e ../c2 ]; do sleep 0.1; done"), 20*time.Second),
				withTimeout(sh("client2", "client", "touch ../c2; while [ ! -e ../c1 ]; do sleep 0.1; done"), 20*time.Second)},
			want: map[string]string{"client1": "", "client2": ""},
			code: map[string]int{"client1": 0, "client2": 0},
		},
		{
			// The first server is left hanging by its client's failure,
			// the second has no client left: both are stopped after
			// Linger, not at the test's timeout.
			name: "a client fails before its readiness line",
			steps: []plan.Step{server("server1", "sleep 300"), server("server2", "sleep 300"),
				{Name: "client1", Role: "client", Argv: []string{"/bin/sh", "-c", "exit 1"}, Procs: 1, ProcsPerNode: 1, ReadyMarker: "---"},
				sh("client2", "client", "exit 0")},
			want: map[string]string{
				"server1": `stopped after step client1 ended before its readiness line "---" showed`,
				"server2": `stopped after step client1 ended before its readiness line "---" showed`,
				"client1": "",
				"client2": `not started: step client1 ended before its readiness line "---" showed`},
			code:   map[string]int{"server1": -1, "server2": -1, "client1": 1, "client2": -1},
			within: 20 * time.Second,
		},
		{
			// client2 and its server end as they would; client1's server
			// waits for it forever, so it is stopped once its group is
			// over; the step after the group does not start.
			name: "a client of a group fails",
			steps: []plan.Step{server("server1", "sleep 300"), server("server2", "while [ ! -e ../served2 ]; do sleep 0.1; done"),
				sh("client1", "client", "exit 1"), sh("client2", "client", "sleep 0.5; touch ../served2"), sh("after", "", "exit 0")},
			want: map[string]string{
				"server1": "stopped after step client1 failed (exit status 1)",
				"server2": "", "client1": "", "client2": "",
				"after": "not started: step client1 failed (exit status 1)"},
			code:   map[string]int{"server1": -1, "server2": 0, "client1": 1, "client2": 0, "after": -1},
			within: 20 * time.Second,
		},
		{
			// A monitor (the telemetry sampler) runs beside the step,
			// is stopped once it ended and fails nothing, as in
			// launch.Sequence.
			name: "a monitor beside a step",
			steps: []plan.Step{{Name: "telemetry.0", Role: plan.Monitor, Argv: []string{"/bin/sh", "-c", "echo sampling; exec sleep 300"},
				Procs: 1, ProcsPerNode: 1, ReadyMarker: "sampling"}, sh("work", "", "exit 0")},
			want:   map[string]string{"telemetry.0": "stopped: the test's steps ended", "work": ""},
			code:   map[string]int{"telemetry.0": -1, "work": 0},
			within: 20 * time.Second,
		},
		{
			// An evidence step never runs as a step: only when the
			// script is told the test's time ran out (evidence_test.go).
			name: "an evidence step",
			steps: []plan.Step{sh("work", "", "exit 0"), {Name: "evidence.0", Role: plan.Evidence, Argv: []string{"/bin/sh", "-c", "touch ../evidence-ran"},
				Procs: 1, ProcsPerNode: 1}},
			want:   map[string]string{"work": "", "evidence.0": launch.EvidenceNotRun},
			code:   map[string]int{"work": 0, "evidence.0": -1},
			within: 20 * time.Second,
		},
		{
			// A monitor that fails to start fails nothing either.
			name: "a monitor that exits",
			steps: []plan.Step{{Name: "telemetry.0", Role: plan.Monitor, Argv: []string{"/bin/sh", "-c", "exit 1"},
				Procs: 1, ProcsPerNode: 1, ReadyMarker: "sampling"}, sh("work", "", "exit 0")},
			want:   map[string]string{"telemetry.0": "", "work": ""},
			code:   map[string]int{"telemetry.0": 1, "work": 0},
			within: 20 * time.Second,
		},
		{
			// A step's own Timeout stops that step alone, and is a
			// failure.
			name:  "a step's own timeout",
			steps: []plan.Step{withTimeout(sh("slow", "", "sleep 300"), time.Second), sh("next", "", "exit 0")},
			want: map[string]string{"slow": "timed out after 1s",
				"next": "not started: step slow failed (timed out after 1s)"},
			code:   map[string]int{"slow": -1, "next": -1},
			within: 20 * time.Second,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			outs := launchHere(t, c.steps...)
			if c.within > 0 {
				assert.Assert(t, time.Since(start) < c.within, "took %s", time.Since(start))
			}
			got, code := map[string]string{}, map[string]int{}
			for i, o := range outs {
				assert.Equal(t, o.Step, c.steps[i].Name, "outputs in plan order")
				got[o.Step], code[o.Step] = o.LaunchError, o.ExitCode
			}
			assert.DeepEqual(t, got, c.want)
			assert.DeepEqual(t, code, c.code)
		})
	}
}

func withTimeout(s plan.Step, d time.Duration) plan.Step {
	s.Timeout = d
	return s
}

// A step that ran leaves its log, the files it wrote and the node of its
// rank; the script and the job's output are kept, secrets masked.
func TestLaunchCollects(t *testing.T) {
	s := sh("one", "", `echo "out $GREETING"; echo '{"n": 1}' >r.json; exit 3`)
	s.Env = map[string]string{"GREETING": "hello"}
	s.Files = []string{"r.json", "missing.json"}
	outs := launchHere(t, s)
	o := outs[0]
	assert.Equal(t, o.ExitCode, 3)
	assert.Equal(t, o.LaunchError, "")
	host, err := os.Hostname()
	assert.NilError(t, err)
	assert.Equal(t, o.Host, host)
	assert.DeepEqual(t, o.RankHosts, []string{host})
	log, err := os.ReadFile(o.Log)
	assert.NilError(t, err)
	assert.Equal(t, string(log), "out hello\n")
	data, err := os.ReadFile(o.Files["r.json"])
	assert.NilError(t, err)
	assert.Equal(t, string(data), "{\"n\": 1}\n")
	_, missing := o.Files["missing.json"]
	assert.Assert(t, !missing)
	raw := filepath.Dir(o.Log)
	script, err := os.ReadFile(filepath.Join(raw, "batch-job.sh"))
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(script), "\texport GREETING=hello\n"), string(script))
	ranks, err := os.ReadFile(filepath.Join(raw, "one.ranks"))
	assert.NilError(t, err)
	assert.Equal(t, string(ranks), "0 "+host+"\n")
}

// The script's order of the plan: launch.Sequence's groups.
func TestGroups(t *testing.T) {
	srv := plan.Step{Name: "s", Role: "server", ReadyMarker: "r"}
	cl := plan.Step{Name: "c", Role: "client"}
	for _, c := range []struct {
		name  string
		steps []plan.Step
		want  []string
	}{
		{"plain steps alone", []plan.Step{{Name: "a"}, {Name: "b"}}, []string{"gpuaccept_group 0", "gpuaccept_group 1"}},
		{"pairs one after the other", []plan.Step{srv, cl, srv, cl}, []string{"gpuaccept_background 0", "gpuaccept_group 1", "gpuaccept_background 2", "gpuaccept_group 3"}},
		{"servers then clients together", []plan.Step{srv, srv, cl, cl, {Name: "after"}}, []string{"gpuaccept_background 0", "gpuaccept_background 1", "gpuaccept_group 2 3", "gpuaccept_group 4"}},
		{"a client with a marker is a server", []plan.Step{cl, {Name: "c2", Role: "client", ReadyMarker: "x"}, cl}, []string{"gpuaccept_group 0", "gpuaccept_background 1", "gpuaccept_group 2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.DeepEqual(t, groups(c.steps), c.want)
		})
	}
}

// Values reach the shell quoted; host references read the nodes file.
func TestWord(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$(reboot)", "'$(reboot)'"},
		{"it's", `'it'\''s'`},
		{plan.HostRef(1), `"$(sed -n 2p "$job/hosts")"`},
		{plan.HostListRef(3), `"$(sed -n 1,3p "$job/hosts" | paste -sd, -)"`},
	} {
		assert.Equal(t, Word(c.in), c.want, c.in)
	}
	assert.Equal(t, JoinWithJob([]string{"$job/a.ranks", "$job/A;x", "b c"}), `"$job/a.ranks" '$job/A;x' 'b c'`)
}

// The rank wrapper reads the MPI starters' rank variables, then the
// scheduler's.
func TestRankWrapper(t *testing.T) {
	o := Options{RankVars: []string{"SLURM_PROCID"}, NodeVar: "SLURMD_NODENAME"}
	assert.Equal(t, rankWrapper(o), `r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-0}}}}; echo "$r ${SLURMD_NODENAME:-$(hostname)}" >"$0/$r"; exec "$@"`)
	assert.Equal(t, rankWrapper(Options{}), `r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-0}}}; echo "$r $(hostname)" >"$0/$r"; exec "$@"`)
}

// The rank wrapper's files, read back in rank order whatever order the
// directory lists them in.
func TestReadRanks(t *testing.T) {
	dir := t.TempDir()
	for name, line := range map[string]string{"10": "10 n2\n", "2": "2 n1\n", "9": "9 n2", "0": "0 n1\n", "junk": "x y z\n", "neg": "-1 n3\n"} {
		assert.NilError(t, os.WriteFile(filepath.Join(dir, name), []byte(line), 0o644))
	}
	ranks := readRanks(dir)
	assert.DeepEqual(t, ranks, []rankHost{{0, "n1"}, {2, "n1"}, {9, "n2"}, {10, "n2"}}, cmp.AllowUnexported(rankHost{}))
	assert.Equal(t, hostList(ranks), "n1,n2")
	assert.DeepEqual(t, rankHosts(ranks), []string{"n1", "", "n1", "", "", "", "", "", "", "n2", "n2"})
	assert.DeepEqual(t, rankHosts(append(ranks, rankHost{maxRanks, "n9"})), rankHosts(ranks))
	assert.Assert(t, readRanks(filepath.Join(dir, "missing")) == nil)
}

func FuzzParseRankLine(f *testing.F) {
	for _, s := range []string{"0 n1", "10 gpu-a01", "-1 n3", "x y z", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, ok := parseRankLine(line)
		if ok && (r.rank < 0 || r.host == "") {
			t.Fatalf("%q: %+v", line, r)
		}
	})
}
