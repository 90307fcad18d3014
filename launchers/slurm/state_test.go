package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func captured(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "captured", name))
	assert.NilError(t, err)
	return string(data)
}

// Every parser on the outputs captured from the test cluster (see
// testdata/captured/README.md).
func TestParseCaptured(t *testing.T) {
	type parser func(out, id string) (JobState, bool, error)
	for _, c := range []struct {
		file  string
		parse parser
		id    string
		ok    bool
		want  JobState
	}{
		{"squeue-running.txt", parseSqueue, "5", true, JobState{ID: "5", State: "RUNNING", Reason: "None", Nodes: "n[1-2]", Source: "squeue"}},
		{"squeue-pending.txt", parseSqueue, "6", true, JobState{ID: "6", State: "PENDING", Reason: "Resources", Source: "squeue"}},
		{"squeue-cancelled.txt", parseSqueue, "5", true, JobState{ID: "5", State: "CANCELLED", Reason: "None", Nodes: "n[1-2]", Source: "squeue"}},
		{"squeue-completed.txt", parseSqueue, "6", true, JobState{ID: "6", State: "COMPLETED", Reason: "None", Nodes: "n[1-2]", Source: "squeue"}},
		{"squeue-failed.txt", parseSqueue, "7", true, JobState{ID: "7", State: "FAILED", Reason: "NonZeroExitCode", Nodes: "n1", Source: "squeue"}},
		{"squeue-timeout.txt", parseSqueue, "8", true, JobState{ID: "8", State: "TIMEOUT", Reason: "TimeLimit", Nodes: "n1", Source: "squeue"}},
		{"squeue-running.txt", parseSqueue, "6", false, JobState{}},
		{"sacct-pending.txt", parseSacct, "6", true, JobState{ID: "6", State: "PENDING", Reason: "None", ExitCode: "0:0", Nodes: "None assigned", Source: "sacct"}},
		{"sacct-cancelled.txt", parseSacct, "5", true, JobState{ID: "5", State: "CANCELLED", Reason: "None", ExitCode: "0:0", Nodes: "n[1-2]", Source: "sacct"}},
		{"sacct-completed.txt", parseSacct, "6", true, JobState{ID: "6", State: "COMPLETED", Reason: "None", ExitCode: "0:0", Nodes: "n[1-2]", Source: "sacct"}},
		{"sacct-failed.txt", parseSacct, "7", true, JobState{ID: "7", State: "FAILED", Reason: "None", ExitCode: "3:0", Nodes: "n1", Source: "sacct"}},
		{"sacct-timeout.txt", parseSacct, "8", true, JobState{ID: "8", State: "TIMEOUT", Reason: "None", ExitCode: "0:0", Nodes: "n1", Source: "sacct"}},
		{"sacct-unknown.txt", parseSacct, "999999", false, JobState{}},
		{"scontrol-running.txt", parseScontrol, "5", true, JobState{ID: "5", State: "RUNNING", Reason: "None", ExitCode: "0:0", Nodes: "n[1-2]", Source: "scontrol"}},
		{"scontrol-pending.txt", parseScontrol, "6", true, JobState{ID: "6", State: "PENDING", Reason: "Resources", ExitCode: "0:0", Source: "scontrol"}},
		{"scontrol-cancelled.txt", parseScontrol, "5", true, JobState{ID: "5", State: "CANCELLED", Reason: "None", ExitCode: "0:15", Nodes: "n[1-2]", Source: "scontrol"}},
		{"scontrol-completed.txt", parseScontrol, "6", true, JobState{ID: "6", State: "COMPLETED", Reason: "None", ExitCode: "0:0", Nodes: "n[1-2]", Source: "scontrol"}},
		{"scontrol-failed.txt", parseScontrol, "7", true, JobState{ID: "7", State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "3:0", Nodes: "n1", Source: "scontrol"}},
		{"scontrol-timeout.txt", parseScontrol, "8", true, JobState{ID: "8", State: "TIMEOUT", Reason: "TimeLimit", ExitCode: "0:15", Nodes: "n1", Source: "scontrol"}},
		{"scontrol-unknown.txt", parseScontrol, "999999", false, JobState{}},
	} {
		t.Run(c.file, func(t *testing.T) {
			got, ok, err := c.parse(captured(t, c.file), c.id)
			assert.NilError(t, err)
			assert.Equal(t, ok, c.ok)
			assert.DeepEqual(t, got, c.want)
		})
	}
}

func TestParseErrors(t *testing.T) {
	_, _, err := parseSqueue("5|RUNNING\n", "5")
	assert.ErrorContains(t, err, "squeue output line 1: want 4 fields")
	_, _, err = parseSacct("x|y\n", "5")
	assert.ErrorContains(t, err, "sacct output line 1: want 5 fields")
	_, _, err = parseScontrol("JobId=5 JobName=x\n", "5")
	assert.ErrorContains(t, err, "no JobState")
}

func TestStateString(t *testing.T) {
	st, _, err := parseScontrol(captured(t, "scontrol-timeout.txt"), "8")
	assert.NilError(t, err)
	assert.Equal(t, st.String(), "job 8 TIMEOUT (the job reached its time limit (--time); reason TimeLimit; exit code 0:15; nodes n1)")
	assert.Assert(t, st.Terminal())
	st, _, _ = parseSqueue(captured(t, "squeue-pending.txt"), "6")
	assert.Equal(t, st.String(), "job 6 PENDING (reason Resources)")
	assert.Assert(t, !st.Terminal())
}

func TestParseJobID(t *testing.T) {
	for in, want := range map[string]string{"12\n": "12", "12;cluster\n": "12", "sbatch: warning: x\n34\n": "34"} {
		got, err := parseJobID(in)
		assert.NilError(t, err)
		assert.Equal(t, got, want)
	}
	for _, in := range []string{"", "\n", "Submitted batch job 12\n", ";x"} {
		_, err := parseJobID(in)
		assert.Assert(t, err != nil, "%q", in)
	}
}

// answer is one captured reply of a Slurm command.
type answer struct {
	stdout, stderr string
	fail           bool
}

// fakeSlurm answers commands by name with captured outputs.
func fakeSlurm(t *testing.T, answers map[string]answer) *Launcher {
	return &Launcher{Config: Config{MPI: MPIMpirun, Mode: ModeSubmit, GPUs: GPUsNone}, Environ: []string{},
		exec: func(_ context.Context, _ []string, name string, args ...string) (string, string, error) {
			key := name
			if len(args) > 0 && name == "scontrol" {
				key += " " + args[0]
			}
			a, ok := answers[key]
			if !ok {
				t.Fatalf("unexpected command %s %s", name, strings.Join(args, " "))
			}
			if a.fail {
				return a.stdout, a.stderr, errors.New("exit status 1")
			}
			return a.stdout, a.stderr, nil
		}}
}

// query falls back from squeue to sacct to scontrol, copes with a cluster
// without accounting, and takes the exit code from where it is reported.
func TestQueryFallback(t *testing.T) {
	unknown := answer{stderr: captured(t, "squeue-unknown.txt"), fail: true}
	disabled := answer{stderr: captured(t, "sacct-disabled.txt"), fail: true}
	for _, c := range []struct {
		name    string
		answers map[string]answer
		id      string
		want    JobState
		err     string
	}{
		{"running in squeue", map[string]answer{"squeue": {stdout: captured(t, "squeue-running.txt")}}, "5",
			JobState{ID: "5", State: "RUNNING", Reason: "None", Nodes: "n[1-2]", Source: "squeue"}, ""},
		{"ended in squeue: exit code from scontrol", map[string]answer{"squeue": {stdout: captured(t, "squeue-failed.txt")}, "scontrol show": {stdout: captured(t, "scontrol-failed.txt")}}, "7",
			JobState{ID: "7", State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "3:0", Nodes: "n1", Source: "scontrol"}, ""},
		{"ended in squeue, scontrol forgot it: sacct", map[string]answer{"squeue": {stdout: captured(t, "squeue-failed.txt")}, "scontrol show": {stderr: captured(t, "scontrol-unknown.txt"), fail: true}, "sacct": {stdout: captured(t, "sacct-failed.txt")}}, "7",
			JobState{ID: "7", State: "FAILED", Reason: "None", ExitCode: "3:0", Nodes: "n1", Source: "sacct"}, ""},
		{"gone from squeue, in sacct", map[string]answer{"squeue": unknown, "sacct": {stdout: captured(t, "sacct-timeout.txt")}}, "8",
			JobState{ID: "8", State: "TIMEOUT", Reason: "None", ExitCode: "0:0", Nodes: "n1", Source: "sacct"}, ""},
		{"ended in squeue: scontrol", map[string]answer{"squeue": {stdout: captured(t, "squeue-timeout.txt")}, "scontrol show": {stdout: captured(t, "scontrol-timeout.txt")}}, "8",
			JobState{ID: "8", State: "TIMEOUT", Reason: "TimeLimit", ExitCode: "0:15", Nodes: "n1", Source: "scontrol"}, ""},
		{"no accounting, gone from squeue", map[string]answer{"squeue": unknown, "sacct": disabled, "scontrol show": {stdout: captured(t, "scontrol-failed.txt")}}, "7",
			JobState{ID: "7", State: "FAILED", Reason: "NonZeroExitCode", ExitCode: "3:0", Nodes: "n1", Source: "scontrol"}, ""},
		{"unknown everywhere", map[string]answer{"squeue": unknown, "sacct": {stdout: captured(t, "sacct-unknown.txt")}, "scontrol show": {stderr: captured(t, "scontrol-unknown.txt"), fail: true}}, "999999",
			JobState{}, "Invalid job id specified"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := fakeSlurm(t, c.answers).query(context.Background(), c.id)
			if c.err != "" {
				assert.ErrorContains(t, err, c.err)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, got, c.want)
		})
	}
}

func TestResolveMPI(t *testing.T) {
	list := answer{stdout: captured(t, "srun-mpi-list.txt")}
	for _, c := range []struct {
		name    string
		mpi     string
		answers map[string]answer
		want    string
		err     string
	}{
		{"auto follows MpiDefault none: mpirun", MPIAuto, map[string]answer{"scontrol show": {stdout: captured(t, "scontrol-config-mpidefault.txt")}}, MPIMpirun, ""},
		{"auto follows MpiDefault pmix", MPIAuto, map[string]answer{"scontrol show": {stdout: "MpiDefault              = pmix_v4\n"}, "srun": list}, MPIPMIx, ""},
		{"pmix offered", MPIPMIx, map[string]answer{"srun": list}, MPIPMIx, ""},
		{"pmix not offered", MPIPMIx, map[string]answer{"srun": {stdout: "MPI plugin types are...\n\tnone\n\tpmi2\n"}}, "", "--slurm-mpi pmix cannot work: this cluster's srun offers none, pmi2"},
		{"pmi2 with Debian's Open MPI", MPIPMI2, map[string]answer{"srun": list, "ompi_info": {stdout: captured(t, "ompi_info-pmix.txt")}}, "", "no s1/s2 pmix component"},
		{"pmi2 with Slurm PMI-2 support", MPIPMI2, map[string]answer{"srun": list, "ompi_info": {stdout: "mca:pmix:s2:version:\"mca:2.1.0\"\n"}}, MPIPMI2, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := fakeSlurm(t, c.answers)
			l.Config.MPI = c.mpi
			got, err := l.resolveMPI(context.Background())
			if c.err != "" {
				assert.ErrorContains(t, err, c.err)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, got, c.want)
		})
	}
}

func FuzzParseStates(f *testing.F) {
	ents, err := os.ReadDir(filepath.Join("testdata", "captured"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".txt") {
			f.Add(captured(f, e.Name()))
		}
	}
	f.Fuzz(func(t *testing.T, out string) {
		for _, id := range []string{"5", "6", "7", "8"} {
			_, _, _ = parseSqueue(out, id)
			_, _, _ = parseSacct(out, id)
			_, _, _ = parseScontrol(out, id)
		}
		_, _ = parseJobID(out)
		_ = mpiTypes(out)
		_ = srunErrorsIn(out)
		_, _ = jobMinutes(out)
	})
}
