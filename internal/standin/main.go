// Command standin stands in for a GPU benchmark binary on machines without
// GPUs: installed under the benchmark's name (all_reduce_perf, ...), it
// prints a recorded real output and writes the recorded -J JSON file (with
// its own environment in the JSON's "env" list, as nccl-tests writes it), so the
// launchers, the rank starter and the scheduler around it run for real.
//
// Environment:
//
//	STANDIN_RECORDINGS  folder laid out like testdata/recordings/<name>/
//	                    (required): nccl.TEST/TEST.log (or rccl.TEST/,
//	                    as rccl-tests binaries have the same names) and
//	                    nccl.TEST/TEST.files/TEST.json; the text {nodes}
//	                    in it becomes the number of names in
//	                    GPUACCEPT_HOSTS (1 when unset), so single-node and
//	                    pair runs of one test find different recordings
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
// Degrading on chosen hosts, so that finding a bad node can be tested
// without one: GPUACCEPT_HOSTS (set by every launcher, see
// framework/plan.HostsEnv) names the run's nodes, and
//
//	STANDIN_DEGRADE_HOST         NAME[,NAME...]: when any of them is in
//	                             GPUACCEPT_HOSTS the run is degraded
//	STANDIN_DEGRADE_HCA          NAME: degrade only a step whose argv names
//	                             this HCA (-d NAME, -d=NAME, --ib-dev NAME
//	                             or --ib-dev=NAME), standing in for one
//	                             bad HCA; with no STANDIN_DEGRADE_HOST,
//	                             on any host
//	STANDIN_DEGRADED_RECORDINGS  replay from this folder ({nodes} as
//	                             above) instead of STANDIN_RECORDINGS
//	                             when degraded
//	STANDIN_DEGRADED_LOG         replay this file instead of STANDIN_LOG
//	                             when degraded
//
// A degraded run without its degraded recording set is an error (exit 6),
// never a silent healthy replay.
//
// Under mpirun (or srun) only rank 0 prints, as nccl-tests built with
// MPI=1 does; the rank comes from OMPI_COMM_WORLD_RANK, PMIX_RANK,
// PMI_RANK or SLURM_PROCID, the first one set.
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
	c := choose(os.Getenv, os.Args)
	if c.err != "" {
		fmt.Fprintln(os.Stderr, "standin: "+c.err)
		return 6
	}
	if c.log != "" {
		return replayPaired(c.log)
	}
	dir := c.dir
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), "_mpi")
	test := strings.TrimSuffix(name, "_perf")
	if r := rank(os.Getenv); r != "" && r != "0" {
		return waitAndExit()
	}
	folder := recordingFolder(dir, test)
	logPath := filepath.Join(folder, test+".log")
	f, err := os.Open(logPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "standin: no recording for %s (looked for nccl.%s/ and rccl.%s/ in %s): %v\n", name, test, test, dir, err)
		return 1
	}
	defer f.Close()
	if _, err := io.Copy(os.Stdout, f); err != nil {
		fmt.Fprintf(os.Stderr, "standin: %v\n", err)
		return 1
	}
	for i, a := range os.Args {
		if a == "-J" && i+1 < len(os.Args) {
			src := filepath.Join(folder, test+".files", test+".json")
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

// choice is what the stand-in replays: a paired tool's log, or a
// recordings folder; err says why it cannot choose.
type choice struct {
	log, dir string
	degraded bool
	err      string
}

// choose reads the environment (getenv) and the program's argv and
// decides what to replay, healthy or degraded.
func choose(getenv func(string) string, argv []string) choice {
	hosts := splitList(getenv("GPUACCEPT_HOSTS"))
	nodes := len(hosts)
	if nodes == 0 {
		nodes = 1
	}
	expand := func(v string) string { return strings.ReplaceAll(v, "{nodes}", strconv.Itoa(nodes)) }
	bad := degraded(splitList(getenv("STANDIN_DEGRADE_HOST")), getenv("STANDIN_DEGRADE_HCA"), hosts, argv)
	if log := getenv("STANDIN_LOG"); log != "" {
		if !bad {
			return choice{log: log}
		}
		if d := getenv("STANDIN_DEGRADED_LOG"); d != "" {
			return choice{log: d, degraded: true}
		}
		return choice{err: "degraded run (STANDIN_DEGRADE_HOST/STANDIN_DEGRADE_HCA matched) but STANDIN_DEGRADED_LOG is not set"}
	}
	if bad {
		if d := getenv("STANDIN_DEGRADED_RECORDINGS"); d != "" {
			return choice{dir: expand(d), degraded: true}
		}
		return choice{err: "degraded run (STANDIN_DEGRADE_HOST/STANDIN_DEGRADE_HCA matched) but STANDIN_DEGRADED_RECORDINGS is not set"}
	}
	if d := getenv("STANDIN_RECORDINGS"); d != "" {
		return choice{dir: expand(d)}
	}
	return choice{err: "STANDIN_RECORDINGS is not set"}
}

// degraded reports whether a run on hosts with argv stands for a bad node
// (one of badHosts takes part) or a bad HCA (argv names badHCA), both
// when both are given; neither given is a healthy run.
func degraded(badHosts []string, badHCA string, hosts, argv []string) bool {
	if len(badHosts) == 0 && badHCA == "" {
		return false
	}
	if len(badHosts) > 0 && !overlap(badHosts, hosts) {
		return false
	}
	return badHCA == "" || namesHCA(argv, badHCA)
}

func overlap(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// namesHCA reports whether argv picks the HCA as perftest tools take it
// (-d NAME, --ib-dev NAME, --ib-dev=NAME; -d=NAME too).
func namesHCA(argv []string, hca string) bool {
	for i, a := range argv {
		switch {
		case (a == "-d" || a == "--ib-dev") && i+1 < len(argv) && argv[i+1] == hca:
			return true
		case a == "-d="+hca || a == "--ib-dev="+hca:
			return true
		}
	}
	return false
}

func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// rank is this process's rank as the starter set it, "" when none did.
// Open MPI's comes first: under mpirun inside a Slurm job the ranks
// inherit SLURM_PROCID of the srun that started the daemon.
func rank(getenv func(string) string) string {
	for _, k := range []string{"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"} {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// recordingFolder is the test's folder in dir: nccl.TEST, or rccl.TEST
// when only that exists (rccl-tests binaries have nccl-tests' names).
func recordingFolder(dir, test string) string {
	nccl := filepath.Join(dir, "nccl."+test)
	if _, err := os.Stat(nccl); err == nil {
		return nccl
	}
	if rccl := filepath.Join(dir, "rccl."+test); dirExists(rccl) {
		return rccl
	}
	return nccl
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
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
