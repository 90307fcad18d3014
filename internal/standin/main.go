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
//	STANDIN_LOG         replay this file instead of the recording named
//	                    after the program (for tools other than nccl-tests,
//	                    such as the two sides of ib_write_bw); writes no JSON
//	STANDIN_PIDFILE     append this process's pid to this file first, so
//	                    tests can check that nothing is left running
//	STANDIN_DELAY       sleep this long (Go duration) before anything else,
//	                    to stand in for a slow start
//	STANDIN_LISTEN      serve like a benchmark's server side: listen on this
//	                    TCP address, print the recording through its first
//	                    line holding STANDIN_PAUSE_AFTER, wait for one client
//	                    to connect, then print the rest
//	STANDIN_CONNECT     act as a client: connect to this TCP address first
//	                    and fail (exit 1), as the real client does, when
//	                    nothing listens there
//
// Under mpirun only rank 0 prints, as nccl-tests built with MPI=1 does.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
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
	if p := os.Getenv("STANDIN_PIDFILE"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	}
	if d, err := time.ParseDuration(os.Getenv("STANDIN_DELAY")); err == nil {
		time.Sleep(d)
	}
	if log := os.Getenv("STANDIN_LOG"); log != "" {
		return replayPaired(log)
	}
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

// replayPaired replays a server's or client's recording (STANDIN_LOG),
// listening or connecting first when STANDIN_LISTEN or STANDIN_CONNECT ask.
func replayPaired(log string) int {
	data, err := os.ReadFile(log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "standin: %v\n", err)
		return 1
	}
	if addr := os.Getenv("STANDIN_CONNECT"); addr != "" {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			fmt.Fprintf(os.Stderr, " Couldn't connect to %s: %v\n", addr, err)
			return 1
		}
		defer c.Close()
	}
	if addr := os.Getenv("STANDIN_LISTEN"); addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "standin: listen on %s: %v\n", addr, err)
			return 1
		}
		defer ln.Close()
		head, rest := data, []byte(nil)
		if m := os.Getenv("STANDIN_PAUSE_AFTER"); m != "" {
			if i := bytes.Index(data, []byte(m)); i >= 0 {
				end := i + bytes.IndexByte(data[i:], '\n') + 1
				if end <= i {
					end = len(data)
				}
				head, rest = data[:end], data[end:]
			}
		}
		os.Stdout.Write(head)
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintf(os.Stderr, "standin: accept on %s: %v\n", addr, err)
			return 1
		}
		c.Close()
		os.Stdout.Write(rest)
		return waitAndExit()
	}
	os.Stdout.Write(data)
	return waitAndExit()
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
