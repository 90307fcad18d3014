package slurm

import (
	"fmt"
	"strings"

	"github.com/gpuaccept/gpuaccept/launchers/batch"
)

// JobState is what Slurm says about a job.
type JobState struct {
	// ID is the job id.
	ID string
	// State is Slurm's job state in capitals (PENDING, RUNNING, COMPLETED,
	// FAILED, TIMEOUT, CANCELLED, NODE_FAIL, ...), without sacct's
	// "by UID" suffix.
	State string
	// Reason is Slurm's reason (Resources, Priority, NonZeroExitCode,
	// TimeLimit, ...); "None" or empty when there is none.
	Reason string
	// ExitCode is Slurm's "status:signal" of the batch script (e.g. "3:0",
	// "0:15"); empty when the source does not report it (squeue).
	ExitCode string
	// Nodes is the compressed node list ("n[1-2]"); empty while pending.
	Nodes string
	// Source names the command that answered: squeue, sacct or scontrol.
	Source string
}

// terminal are the job states from which a job never runs again.
var terminal = map[string]bool{
	"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true,
	"PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true, "OUT_OF_MEMORY": true, "REVOKED": true,
	"SPECIAL_EXIT": true,
}

// Terminal reports whether the job has ended for good.
func (s JobState) Terminal() bool { return terminal[s.State] }

// meaning explains the states a user needs explained.
var meaning = map[string]string{
	"TIMEOUT":       "the job reached its time limit (--time)",
	"NODE_FAIL":     "a node of the job failed",
	"CANCELLED":     "the job was cancelled",
	"OUT_OF_MEMORY": "the job ran out of memory",
	"BOOT_FAIL":     "a node failed to boot",
	"PREEMPTED":     "the job was preempted",
	"DEADLINE":      "the job reached its deadline",
	"FAILED":        "the batch script exited non-zero",
}

// String renders the state for messages: "job 12 TIMEOUT (the job reached
// its time limit (--time); reason TimeLimit; exit code 0:15; nodes n[1-2])".
func (s JobState) String() string { return s.batch().String() }

// batch is the state as launchers/batch follows it: a job not yet started
// is PENDING or CONFIGURING (its nodes booting).
func (s JobState) batch() batch.State {
	return batch.State{ID: s.ID, State: s.State, Ended: s.Terminal(), Queued: s.State == "PENDING" || s.State == "CONFIGURING",
		Meaning: meaning[s.State], Reason: s.Reason, ExitCode: s.ExitCode, Nodes: s.Nodes, Source: s.Source}
}

// squeueFormat is the -o format parseSqueue reads.
const squeueFormat = "%i|%T|%r|%N"

// sacctFields is the -o field list parseSacct reads (with -n -P -X).
const sacctFields = "JobID,State,ExitCode,Reason,NodeList"

// parseSqueue reads `squeue -h -t all -j ID -o '%i|%T|%r|%N'`. It returns
// ok false when the output holds no line for the job (squeue forgot it, or
// answered with an error).
func parseSqueue(out, id string) (JobState, bool, error) {
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 4 {
			return JobState{}, false, fmt.Errorf("squeue output line %d: want 4 fields (%s), got %q", i+1, squeueFormat, line)
		}
		if f[0] != id {
			continue
		}
		return JobState{ID: f[0], State: f[1], Reason: f[2], Nodes: f[3], Source: "squeue"}, true, nil
	}
	return JobState{}, false, nil
}

// accountingDisabled is sacct's answer (exit status 1) on a cluster without
// accounting storage.
const accountingDisabled = "accounting storage is disabled"

// parseSacct reads `sacct -n -P -X -j ID -o JobID,State,ExitCode,Reason,NodeList`.
// ok is false when there is no line for the job.
func parseSacct(out, id string) (JobState, bool, error) {
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 5 {
			return JobState{}, false, fmt.Errorf("sacct output line %d: want 5 fields (%s), got %q", i+1, sacctFields, line)
		}
		if f[0] != id {
			continue
		}
		// "CANCELLED by 0": the canceller's uid is no part of the state.
		st, _, _ := strings.Cut(f[1], " ")
		return JobState{ID: f[0], State: st, ExitCode: f[2], Reason: f[3], Nodes: f[4], Source: "sacct"}, true, nil
	}
	return JobState{}, false, nil
}

// parseScontrol reads `scontrol show job -o ID` (KEY=VALUE words on one
// line per job). ok is false when no job with that id is described.
func parseScontrol(out, id string) (JobState, bool, error) {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "JobId=") {
			continue
		}
		kv := map[string]string{}
		for _, w := range strings.Fields(line) {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				continue
			}
			if _, seen := kv[k]; !seen {
				kv[k] = v
			}
		}
		if kv["JobId"] != id {
			continue
		}
		st := JobState{ID: id, State: kv["JobState"], Reason: kv["Reason"], ExitCode: kv["ExitCode"], Nodes: kv["NodeList"], Source: "scontrol"}
		if st.State == "" {
			return JobState{}, false, fmt.Errorf("scontrol show job %s: no JobState in %q", id, line)
		}
		return st, true, nil
	}
	return JobState{}, false, nil
}

// parseJobID reads `sbatch --parsable`'s answer: "ID" or "ID;cluster".
func parseJobID(out string) (string, error) {
	line := strings.TrimSpace(out)
	if i := strings.LastIndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[i+1:])
	}
	id, _, _ := strings.Cut(line, ";")
	if id == "" {
		return "", fmt.Errorf("sbatch --parsable printed no job id (%q)", out)
	}
	for _, r := range id {
		if r < '0' || r > '9' {
			return "", fmt.Errorf("sbatch --parsable printed %q, not a job id", line)
		}
	}
	return id, nil
}
