// Command standin stands in for a GPU benchmark binary on machines without
// GPUs: installed under the benchmark's name (all_reduce_perf, ...), it
// prints a recorded real output and writes the recorded -J JSON file (with
// its own environment in the JSON's "env" list, as nccl-tests writes it), so the
// launchers, the rank starter and the scheduler around it run for real.
//
// Environment:
//
//	STANDIN_RECORDINGS  folder laid out like testdata/recordings/<name>/
//	                    (required): TEST/STEP.log and TEST/STEP.files/
//	STANDIN_SLEEP       sleep this long (Go duration) after printing the
//	                    header, to stand in for a hung run
//	STANDIN_EXIT        exit with this status after printing
//
// Under mpirun only rank 0 prints, as nccl-tests built with MPI=1 does.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func main() {
	os.Exit(run())
}

func run() int {
	dir := os.Getenv("STANDIN_RECORDINGS")
	if dir == "" {
		fmt.Fprintln(os.Stderr, "standin: STANDIN_RECORDINGS is not set")
		return 6
	}
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), "_mpi")
	test := strings.TrimSuffix(name, "_perf")
	rank := os.Getenv("OMPI_COMM_WORLD_RANK")
	if rank == "" {
		rank = os.Getenv("PMI_RANK")
	}
	if rank != "" && rank != "0" {
		return waitAndExit()
	}
	logPath := filepath.Join(dir, "nccl."+test, test+".log")
	f, err := os.Open(logPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "standin: no recording for %s: %v\n", name, err)
		return 1
	}
	defer f.Close()
	if _, err := io.Copy(os.Stdout, f); err != nil {
		fmt.Fprintf(os.Stderr, "standin: %v\n", err)
		return 1
	}
	for i, a := range os.Args {
		if a == "-J" && i+1 < len(os.Args) {
			src := filepath.Join(dir, "nccl."+test, test+".files", test+".json")
			if data, err := os.ReadFile(src); err == nil {
				data = withEnv(data)
				if err := os.WriteFile(os.Args[i+1], data, 0o644); err != nil {
					fmt.Fprintf(os.Stderr, "standin: %v\n", err)
					return 1
				}
			}
		}
	}
	return waitAndExit()
}

// envList matches the "env" list of an nccl-tests JSON file (recordings
// keep only NCCL_ and CUDA_ variables there, none holding a ']').
var envList = regexp.MustCompile(`"env"\s*:\s*\[[^\]]*\]`)

// withEnv puts this process's whole environment into the JSON's "env" list,
// as nccl-tests does, so tests see secrets where a real run would put them.
func withEnv(data []byte) []byte {
	env, err := json.Marshal(os.Environ())
	if err != nil {
		return data
	}
	return envList.ReplaceAllLiteral(data, append([]byte(`"env": `), env...))
}

func waitAndExit() int {
	if d, err := time.ParseDuration(os.Getenv("STANDIN_SLEEP")); err == nil {
		time.Sleep(d)
	}
	if c, err := strconv.Atoi(os.Getenv("STANDIN_EXIT")); err == nil {
		return c
	}
	return 0
}
