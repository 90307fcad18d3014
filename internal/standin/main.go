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
//	                    such as the two sides of ib_write_bw); writes no
//	                    JSON. The text {role} in it becomes "server" or
//	                    "client", and a folder means ROLE.log in it: the
//	                    role is perftest's rule read from argv (a client
//	                    names the server's address, a server names none),
//	                    so one setting serves both sides of a pair
//	STANDIN_PIDFILE     append this process's pid (its own namespace's: a
//	                    step's first process has its host pid there too),
//	                    to this file
//	                    first, so tests can check that nothing is left
//	                    running
//	STANDIN_DELAY       sleep this long (Go duration) before anything else,
//	                    to stand in for a slow start
//	STANDIN_LISTEN      serve like a benchmark's server side: listen on this
//	                    TCP address, print the recording through its first
//	                    line holding STANDIN_PAUSE_AFTER, wait for one client
//	                    to connect, then print the rest. "argv": the
//	                    perftest pair argv describes, for both sides at
//	                    once: the server (no address in argv) listens on
//	                    its -p port (perftest's 18515 by default) on every
//	                    address, the client connects to argv's address and
//	                    -p port, as STANDIN_CONNECT does
//	STANDIN_PAUSE_AFTER the text of the line after which a listening server
//	                    waits for its client ("Waiting for client to
//	                    connect"); unset: it prints everything first
//	STANDIN_CONNECT     act as a client: connect to this TCP address first
//	                    and fail (exit 1), as the real client does, when
//	                    nothing listens there
//	STANDIN_DEVICE      "argv": print the paired log with the HCA of its
//	                    "Device : NAME" lines replaced by argv's -d (or
//	                    --ib-dev), so one recording stands in for every
//	                    HCA a plan names (the recording's own name
//	                    otherwise, the default); a replay behaviour like
//	                    the degraded copies: the recording files are
//	                    untouched and no parser test reads this output
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
//	                             when degraded ({role} and folders as
//	                             STANDIN_LOG)
//	STANDIN_DEGRADE_ROLE         server or client: degrade only that side
//	                             of a pair (role as for STANDIN_LOG); a
//	                             plan puts the server on the test's first
//	                             node and the client on the second, so
//	                             this picks the node of a bad HCA
//
//	STANDIN_DEGRADE_LINK         SERVER_HCA:CLIENT_HCA: degrade the pair
//	                             of exactly these two HCAs (-d of the
//	                             server and of the client), one bad
//	                             cable or switch path; needs the two
//	                             sides to connect
//
// The two sides of a pair that connect (STANDIN_LISTEN, STANDIN_CONNECT)
// tell each other whether they are degraded and which HCA (-d) they run
// on, and both replay STANDIN_DEGRADED_LOG when either is, or when they
// are STANDIN_DEGRADE_LINK's pair: both ends of one slow link measure the
// same bandwidth, and a perftest client's table is the one judged.
//
// Hanging on a chosen node, so that naming a hung node can be tested
// without one (issue 34): as a rank stopped with SIGSTOP on that node,
// which is how a hang is made on a GPU machine too,
//
//	STANDIN_HANG_HOST   NAME[,NAME...]: when any of them is in
//	                    GPUACCEPT_HOSTS, the nccl-tests replay hangs
//	STANDIN_HANG_AFTER  the message size (bytes, the size column) of the
//	                    last result row printed before the hang; unset:
//	                    the header only. The process then stops itself
//	                    (SIGSTOP: state T, what the evidence step sees)
//	                    and, continued, sleeps until killed; every rank
//	                    under mpirun stops so, rank 0 after its rows.
//
// A degraded run without its degraded recording set is an error (exit 6),
// never a silent healthy replay.
//
// Under mpirun (or srun) only rank 0 prints, as nccl-tests built with
// MPI=1 does; the rank comes from OMPI_COMM_WORLD_RANK, PMIX_RANK,
// PMI_RANK or SLURM_PROCID, the first one set.
package main

import (
	"bufio"
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
	"syscall"
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
		return replayPaired(c, os.Getenv, os.Args)
	}
	dir := c.dir
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), "_mpi")
	test := strings.TrimSuffix(name, "_perf")
	hung := overlap(splitList(os.Getenv("STANDIN_HANG_HOST")), splitList(os.Getenv("GPUACCEPT_HOSTS")))
	if r := rank(os.Getenv); r != "" && r != "0" {
		if hung {
			hangHere()
		}
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
	if hung {
		replayUntil(f, os.Getenv("STANDIN_HANG_AFTER"))
		hangHere()
	}
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
	// degradedLog is the paired log to switch to when the peer turns out
	// degraded; "" when not set.
	degradedLog string
	degraded    bool
	err         string
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
	role := getenv("STANDIN_DEGRADE_ROLE")
	if role != "" && role != "server" && role != "client" {
		return choice{err: fmt.Sprintf("STANDIN_DEGRADE_ROLE=%q: want server or client", role)}
	}
	bad := degraded(splitList(getenv("STANDIN_DEGRADE_HOST")), getenv("STANDIN_DEGRADE_HCA"), role, hosts, argv)
	if log := getenv("STANDIN_LOG"); log != "" {
		side := perftestArgv(argv).role()
		c := choice{log: pairedLog(log, side)}
		if d := getenv("STANDIN_DEGRADED_LOG"); d != "" {
			c.degradedLog = pairedLog(d, side)
		}
		if !bad {
			return c
		}
		if c.degradedLog == "" {
			return choice{err: "degraded run (STANDIN_DEGRADE_HOST/HCA/ROLE matched) but STANDIN_DEGRADED_LOG is not set"}
		}
		c.log, c.degraded = c.degradedLog, true
		return c
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
// (one of badHosts takes part), a bad HCA (argv names badHCA) or a bad side
// of a pair (argv's perftest role is badRole), all that are given; none
// given is a healthy run.
func degraded(badHosts []string, badHCA, badRole string, hosts, argv []string) bool {
	if len(badHosts) == 0 && badHCA == "" && badRole == "" {
		return false
	}
	if len(badHosts) > 0 && !overlap(badHosts, hosts) {
		return false
	}
	if badRole != "" && perftestArgv(argv).role() != badRole {
		return false
	}
	return badHCA == "" || namesHCA(argv, badHCA)
}

// pairedLog is the log of side ("server" or "client") that the setting v
// names: {role} replaced, or ROLE.log in v when v is a folder.
func pairedLog(v, side string) string {
	if strings.Contains(v, "{role}") {
		return strings.ReplaceAll(v, "{role}", side)
	}
	if dirExists(v) {
		return filepath.Join(v, side+".log")
	}
	return v
}

// perftestValued are the perftest options (ib_write_bw and its siblings,
// perftest 4.5 / 24.x) that take a value as the next argument; any other
// argument not starting with '-' is the server's address.
var perftestValued = map[string]bool{
	"-d": true, "--ib-dev": true, "-p": true, "--port": true, "-i": true, "--ib-port": true,
	"-m": true, "--mtu": true, "-s": true, "--size": true, "-n": true, "--iters": true,
	"-t": true, "--tx-depth": true, "-r": true, "--rx-depth": true, "-u": true, "--qp-timeout": true,
	"-S": true, "--sl": true, "-x": true, "--gid-index": true, "-c": true, "--connection": true,
	"-q": true, "--qp": true, "-I": true, "--inline_size": true, "-D": true, "--duration": true,
	"-f": true, "--margin": true, "-l": true, "--post_list": true, "-Q": true, "--cq-mod": true,
	"-T": true, "--tos": true, "-L": true, "--hop_limit": true, "-g": true, "--mcg": true,
	"-M": true, "--MGID": true, "-k": true, "--mmap": true, "--mmap-offset": true, "--tclass": true,
	"--use_cuda": true, "--use_rocm": true, "--use_neuron": true, "--use_hl": true, "--use_cuda_bus_id": true,
	"--rate_limit": true, "--rate_units": true, "--rate_limit_type": true, "--burst_size": true,
	"--source_ip": true, "--dest_ip": true, "--source_port": true, "--dest_port": true, "--flows": true,
	"--flows_burst": true, "--dlid": true, "--pkey_index": true, "--retry_count": true, "--flow_label": true,
	"--out_json_file": true, "--payload_file_path": true, "--recv_post_list": true, "--latency_gap": true,
	"--wait_destroy": true, "--ipv6-addr": true,
}

// perftest is what the stand-in reads of a perftest argv.
type perftest struct {
	// device is the -d/--ib-dev HCA, port the -p/--port TCP port
	// ("18515", perftest's default, when absent), server the address a
	// client connects to ("" on the server side).
	device, port, server string
}

func perftestArgv(argv []string) perftest {
	pt := perftest{port: "18515"}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			pt.server = a
			continue
		}
		name, val, eq := strings.Cut(a, "=")
		if !eq {
			if !perftestValued[a] || i+1 >= len(argv) {
				continue
			}
			i++
			val = argv[i]
		}
		switch name {
		case "-d", "--ib-dev":
			pt.device = val
		case "-p", "--port":
			pt.port = val
		}
	}
	return pt
}

// role is "client" when argv names a server to connect to, else "server".
func (pt perftest) role() string {
	if pt.server != "" {
		return "client"
	}
	return "server"
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

// envList matches the "env" list of an nccl-tests JSON file: JSON strings,
// which may hold a ']' (a planted secret's value does).
var envList = regexp.MustCompile(`"env"\s*:\s*\[(?:\s*"(?:[^"\\]|\\.)*"\s*,?)*\s*\]`)

// withEnv puts this process's whole environment into the JSON's "env" list,
// as nccl-tests does, so tests see secrets where a real run would put them.
func withEnv(data []byte) []byte {
	env, err := json.Marshal(os.Environ())
	if err != nil {
		return data
	}
	return envList.ReplaceAllLiteral(data, append([]byte(`"env": `), env...))
}

// deviceLine matches the HCA name of perftest's "Device : NAME" lines.
var deviceLine = regexp.MustCompile(`(Device\s*:\s*)\S+`)

// readPaired reads a paired log, its device names replaced by dev when dev
// is not "".
func readPaired(log, dev string) ([]byte, error) {
	data, err := os.ReadFile(log)
	if err != nil {
		return nil, err
	}
	if dev != "" {
		data = deviceLine.ReplaceAll(data, []byte("${1}"+strings.ReplaceAll(dev, "$", "$$")))
	}
	return data, nil
}

// exchange tells the peer whether this side is degraded and which HCA it
// runs on (one line: "1 ionic_2"), and returns the same of the peer; a
// peer that says nothing (a closed connection) is a healthy one on no
// named HCA.
func exchange(c net.Conn, degraded bool, dev string) (peerDegraded bool, peerDev string) {
	flag := "0"
	if degraded {
		flag = "1"
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "%s %s\n", flag, dev); err != nil {
		return false, ""
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return false, ""
	}
	f, d, _ := strings.Cut(strings.TrimSpace(line), " ")
	return f == "1", d
}

// replayPaired replays a server's or client's recording (c.log),
// listening or connecting first when STANDIN_LISTEN or STANDIN_CONNECT
// ask, and switching to the degraded log when the peer is degraded.
func replayPaired(c choice, getenv func(string) string, argv []string) int {
	pt := perftestArgv(argv)
	dev := ""
	if getenv("STANDIN_DEVICE") == "argv" {
		dev = pt.device
	}
	data, err := readPaired(c.log, dev)
	if err != nil {
		fmt.Fprintf(os.Stderr, "standin: %v\n", err)
		return 1
	}
	// peer switches to the degraded log when the other side is degraded
	// and this one is not.
	peer := func(conn net.Conn) int {
		peerBad, peerDev := exchange(conn, c.degraded, pt.device)
		if link := getenv("STANDIN_DEGRADE_LINK"); link != "" {
			srv, cli := pt.device, peerDev
			if pt.role() == "client" {
				srv, cli = peerDev, pt.device
			}
			peerBad = peerBad || link == srv+":"+cli
		}
		if !peerBad || c.degraded {
			return 0
		}
		if c.degradedLog == "" {
			fmt.Fprintln(os.Stderr, "standin: the peer or the link is degraded but STANDIN_DEGRADED_LOG is not set")
			return 6
		}
		if data, err = readPaired(c.degradedLog, dev); err != nil {
			fmt.Fprintf(os.Stderr, "standin: %v\n", err)
			return 1
		}
		return 0
	}
	listen, connect := getenv("STANDIN_LISTEN"), getenv("STANDIN_CONNECT")
	if listen == "argv" {
		listen = ""
		if pt.role() == "server" {
			listen = ":" + pt.port
		} else {
			connect = net.JoinHostPort(pt.server, pt.port)
		}
	}
	if connect != "" {
		conn, err := net.DialTimeout("tcp", connect, 5*time.Second)
		if err != nil {
			fmt.Fprintf(os.Stderr, " Couldn't connect to %s: %v\n", connect, err)
			return 1
		}
		defer conn.Close()
		if code := peer(conn); code != 0 {
			return code
		}
	}
	if listen != "" {
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			fmt.Fprintf(os.Stderr, "standin: listen on %s: %v\n", listen, err)
			return 1
		}
		defer ln.Close()
		marker := getenv("STANDIN_PAUSE_AFTER")
		head, _ := splitAfter(data, marker)
		os.Stdout.Write(head)
		conn, err := ln.Accept()
		if err != nil {
			fmt.Fprintf(os.Stderr, "standin: accept on %s: %v\n", listen, err)
			return 1
		}
		code := peer(conn)
		conn.Close()
		if code != 0 {
			return code
		}
		// The degraded log's head is the healthy one's: print the rest of
		// whichever log the pair settled on.
		_, rest := splitAfter(data, marker)
		os.Stdout.Write(rest)
		return waitAndExit()
	}
	os.Stdout.Write(data)
	return waitAndExit()
}

// splitAfter splits data after the first line holding marker; all of data
// is the head when marker is "" or absent.
func splitAfter(data []byte, marker string) (head, rest []byte) {
	if marker == "" {
		return data, nil
	}
	i := bytes.Index(data, []byte(marker))
	if i < 0 {
		return data, nil
	}
	end := bytes.IndexByte(data[i:], '\n')
	if end < 0 {
		return data, nil
	}
	return data[:i+end+1], data[i+end+1:]
}

// replayUntil prints the recording through its first result row of size
// after (the row's first column), or its header (the lines before the
// first row) when after is "".
func replayUntil(r io.Reader, after string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		row := len(f) > 0 && !strings.HasPrefix(line, "#") && isDigits(f[0])
		if row && after == "" {
			return
		}
		fmt.Println(line)
		if row && f[0] == after {
			return
		}
	}
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// hangHere stops the process as a hung rank (SIGSTOP) and, once
// continued, sleeps until it is killed.
func hangHere() {
	os.Stdout.Sync()
	_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	for {
		time.Sleep(time.Hour)
	}
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
