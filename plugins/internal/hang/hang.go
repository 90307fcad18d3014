// Package hang reads what a hung collective leaves behind, whatever ran
// it: PyTorch's NCCL watchdog lines, NCCL's own WARN lines, NCCL's RAS
// report (NCCL 2.24 and later), py-spy dumps of the ranks, and the
// driver's XID lines of the kernel log. Evidence is what one file shows;
// Suspect says whether it names a node, and why.
//
// It is a package of its own, not part of internal/nccltests, because
// none of these lines is nccl-tests output: the NCCL library prints them
// under any program (nccl-tests, rccl-tests, a training step), so the
// nccl, rccl and train plugins can all read a hang with it. Every format
// it reads is one of testdata/field/hang's real outputs.
package hang

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/lines"
)

// MaxLine bounds one line read (bytes); of a longer line the first
// MaxLine bytes are read (Evidence.Cut counts them) and the lines after
// it are read as any.
const MaxLine = 1 << 20

// Wait is one rank's watchdog report of a collective that did not end:
// "[Rank 0] Watchdog caught collective operation timeout:
// WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=..., Timeout(ms)=600000)
// ran for 600060 milliseconds before timing out."
type Wait struct {
	// Rank is the rank in its process group.
	Rank int
	// Op is PyTorch's OpType as printed (ALLREDUCE, _REDUCE_SCATTER_BASE).
	Op string
	// Seq is the collective's sequence number in its process group.
	Seq int64
	// Numel is NumelIn (elements), -1 when the line has none (PyTorch 1.x).
	Numel int64
	// TimeoutMS and RanMS are the limit and how long it ran (ms).
	TimeoutMS, RanMS int64
	// Line is the 1-based line the report starts on.
	Line int
}

// Progress is a rank's watchdog account of its queue when it gave up:
// the work it failed on, the last it enqueued and the last completed.
type Progress struct {
	Rank                             int
	Seq, LastEnqueued, LastCompleted int64
	Line                             int
}

// IBTimeout is an NCCL WARN of an InfiniBand/RoCE completion with status
// 12 (IBV_WC_RETRY_EXC_ERR: the peer never acknowledged): a link between
// Host and Peer that timed out, not which end is bad.
type IBTimeout struct {
	// Host is the reporting host as NCCL's line prefix names it.
	Host string
	// Peer is the remote address NCCL names.
	Peer string
	Line int
}

// RASRank is a rank a RAS report names.
type RASRank struct {
	Rank, GPU, PID int
	Node           string
}

// RAS is NCCL's RAS report ("Job summary", "Communicators", "Errors",
// "Warnings"), as ncclras or the RAS socket's STATUS prints it.
type RAS struct {
	// Nodes and Ranks are the job summary's totals (0 when absent).
	Nodes, Ranks int
	// Status and Errors are the communicator table's last two columns of
	// its first group (RUNNING, OK, MISMATCH).
	Status, Errors string
	// Op is the collective whose counts differ ("AllGather"), if any.
	Op string
	// Counts maps an operation count to how many ranks launched up to it.
	Counts map[int64]int
	// Listed are the ranks RAS names under the mismatch: the minority.
	Listed []RASRank
	Line   int
}

// Listed's operation count: the count held by as many ranks as Listed.
func (r *RAS) listedAt() (int64, bool) {
	for c, n := range r.Counts {
		if n == len(r.Listed) && len(r.Listed) > 0 {
			return c, true
		}
	}
	return 0, false
}

// Stack is one group of threads a py-spy dump shows with the same frames
// (py-spy prints one thread each; people paste groups).
type Stack struct {
	// Threads are the thread ids (py-spy's pid of the thread, or 0x...).
	Threads []string
	// Idle says py-spy marked the threads idle.
	Idle bool
	// Top is the innermost frame, "wait (threading.py:306)".
	Top string
	// Collective is the torch.distributed call the threads wait in
	// ("all_reduce"), "" when none of the frames is one.
	Collective string
	// Host is the node of the evidence step that dumped it; "" elsewhere.
	Host string
	Line int
}

// XID is one NVRM Xid line: the GPU's PCI address and the code.
type XID struct {
	// Host is the node of the evidence step that read it; "" elsewhere.
	Host string
	PCI  string
	Code int
	Line int
}

// Proc is one process of the test on a node, as the evidence step saw
// it (its procs section): "PID STATE WCHAN RANK ARGS".
type Proc struct {
	Host string
	PID  int
	// Rank is the MPI rank its environment names, -1 when none (one
	// process driving all of a node's GPUs, or no MPI).
	Rank int
	// State is /proc/PID/stat's: R running, S sleeping, D uninterruptible
	// (in the kernel: a driver call that does not return), T stopped
	// (SIGSTOP), Z exited and not reaped.
	State string
	// Wchan is the kernel function it sleeps in, "-" or "0" for none.
	Wchan string
	Args  string
	Line  int
}

// Stuck says the process cannot take part in a collective: stopped, or
// held in the kernel.
func (p Proc) Stuck() bool { return p.State == "T" || p.State == "D" }

// EvidencePrefix heads every line the evidence step (Script) prints:
// "gpuaccept-evidence|HOST|SECTION|TEXT".
const EvidencePrefix = "gpuaccept-evidence|"

// Evidence is what one file shows of a hang.
type Evidence struct {
	Waits    []Wait
	Progress []Progress
	IB       []IBTimeout
	// Warns counts NCCL WARN lines.
	Warns  int
	RAS    *RAS
	Stacks []Stack
	XIDs   []XID
	// Procs are the test's processes the evidence step listed.
	Procs []Proc
	// GPUs are the evidence step's GPU state lines, by host.
	GPUs map[string][]string
	// Notes are what the evidence step could not collect.
	Notes []string
	// Nodes are the host names evidence steps gave themselves
	// (EvidencePrefix lines), in the order first seen.
	Nodes []string
	// Lines is how many lines were read.
	Lines int
	// Cut counts the lines longer than MaxLine, read in part.
	Cut int
	// BadHosts counts the EvidencePrefix lines skipped because their
	// host is no node name (ValidHost).
	BadHosts int
}

// ValidHost reports whether h can name a node: a host name or an IPv4 or
// IPv6 address, 1 to 253 bytes of letters, digits and "-._:" (no space,
// control character or "|"), not starting with "-".
func ValidHost(h string) bool {
	if h == "" || len(h) > 253 || h[0] == '-' {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

var (
	watchdogRe = regexp.MustCompile(`\[Rank (\d{1,7})\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d{1,19}), OpType=([A-Za-z_]{1,64})(?:, NumelIn=(\d{1,19}), NumelOut=\d{1,19})?, Timeout\(ms\)=(\d{1,19})\) ran for (\d{1,19}) milliseconds`)
	// PyTorch 2.1-2.5: "Exception (either an error or timeout) detected
	// by watchdog at work: 1580, last enqueued NCCL work: 1582, last
	// completed NCCL work: 1579."; 2.6 and later: "failure detected by
	// watchdog at work sequence id: N PG status: last enqueued work: N,
	// last completed work: N".
	progressRe = regexp.MustCompile(`Rank (\d{1,7})\]\s+(?:Exception \(either an error or timeout\) detected by watchdog at work: |failure detected by watchdog at work sequence id: )(\d{1,19}),? (?:PG status: )?last enqueued (?:NCCL )?work: (\d{1,19}), last completed (?:NCCL )?work: (\d{1,19})`)
	// "HOST:PID:TID [DEV] FILE:LINE NCCL WARN NET/IB : Got completion from
	// peer ADDR<PORT> with status=12 ..." (older: "with error 12,").
	ibRe        = regexp.MustCompile(`^(\S+?):\d+:\d+ \[\d+\] .*NCCL WARN NET/IB : Got completion from peer (\S+?)<\d+> with (?:status=|error )12\b`)
	jobRowRe    = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$`)
	commRowRe   = regexp.MustCompile(`^\s*\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+([A-Z]+)\s+([A-Z]+)\s*$`)
	rasOpRe     = regexp.MustCompile(`Communicator ranks have different (\w+) operation counts`)
	rasCountRe  = regexp.MustCompile(`^\s*(\d+) ranks? ha(?:ve|s) launched up to operation (\d+)`)
	rasRankRe   = regexp.MustCompile(`^\s*Rank (\d+) -- GPU (\d+) managed by process (\d+) on node (\S+)`)
	threadRe    = regexp.MustCompile(`^Thread (0x[0-9A-Fa-f]+|\d+) \((active|idle)[^)]*\): "`)
	frameRe     = regexp.MustCompile(`^\s+(\S+) \(([^()]*)\)\s*$`)
	xidRe       = regexp.MustCompile(`NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d{1,4})\b`)
	collectives = map[string]bool{"all_reduce": true, "broadcast": true, "all_gather": true, "all_gather_into_tensor": true, "reduce_scatter": true, "reduce_scatter_tensor": true, "all_to_all": true, "all_to_all_single": true, "barrier": true, "send": true, "recv": true, "reduce": true, "gather": true, "scatter": true, "all_gather_object": true, "broadcast_object_list": true}
)

// Read reads one file of a test's own output (a rank's log) for the
// evidence of a hang. name is for errors only. It fails only when the
// reader does; a file with nothing of a hang in it gives an empty
// Evidence. EvidencePrefix lines are read as any other line, never as an
// evidence step's sections: a rank can print them.
func Read(name string, r io.Reader) (Evidence, error) { return read(name, r, false) }

// ReadEvidence reads an evidence step's log (Script's output): its
// EvidencePrefix lines are the step's sections, on the node they name; a
// line whose host is no ValidHost is skipped (Evidence.BadHosts). Only
// the logs of plan.Evidence steps are read with it.
func ReadEvidence(name string, r io.Reader) (Evidence, error) { return read(name, r, true) }

func read(name string, r io.Reader, evidence bool) (Evidence, error) {
	var e Evidence
	var (
		pending   string // a watchdog report the terminal wrapped
		pendingAt int
		inRAS     bool
		inJob     bool
		waitingTh []string // py-spy threads with no frames yet
		waitIdle  bool
		stack     *Stack
	)
	endStack := func() {
		if stack != nil {
			e.Stacks = append(e.Stacks, *stack)
			stack = nil
		}
	}
	n := 0
	host := ""
	err := lines.Each(r, MaxLine, func(b []byte, no int, cut bool) {
		n = no
		if cut {
			e.Cut++
		}
		line := string(b)
		// The evidence step's own lines: its sections are read here, the
		// tools' output it carries as any line, on its node.
		if rest, ok := strings.CutPrefix(line, EvidencePrefix); ok && evidence {
			parts := strings.SplitN(rest, "|", 3)
			if len(parts) == 3 && !ValidHost(parts[0]) {
				e.BadHosts++
				return
			}
			if len(parts) == 3 {
				host, line = parts[0], parts[2]
				if !slices.Contains(e.Nodes, host) {
					e.Nodes = append(e.Nodes, host)
				}
				switch parts[1] {
				case "procs":
					if p, ok := readProc(host, line, n); ok {
						e.Procs = append(e.Procs, p)
					}
					return
				case "gpus":
					if e.GPUs == nil {
						e.GPUs = map[string][]string{}
					}
					e.GPUs[host] = append(e.GPUs[host], line)
					return
				case "note":
					e.Notes = append(e.Notes, host+": "+line)
					return
				}
			}
		}
		// A terminal wraps a long watchdog line ("... OpTy" / "pe=..."):
		// joined until its end shows, at most three lines.
		at := n
		if pending != "" {
			line, at = pending+line, pendingAt
			if !strings.Contains(line, "before timing out") && n-pendingAt < 3 {
				pending = line
				return
			}
			pending = ""
		} else if strings.Contains(line, "Watchdog caught collective operation timeout") && !strings.Contains(line, "before timing out") {
			pending, pendingAt = line, n
			return
		}
		e.read(line, at, host, &inRAS, &inJob)
		// py-spy: "Thread ID (active): "MainThread"" then its frames.
		if m := threadRe.FindStringSubmatch(line); m != nil {
			if stack != nil {
				endStack()
			}
			if len(waitingTh) == 0 {
				waitIdle = m[2] == "idle"
			}
			waitingTh = append(waitingTh, m[1])
			return
		}
		if m := frameRe.FindStringSubmatch(line); m != nil && (len(waitingTh) > 0 || stack != nil) {
			if stack == nil {
				stack = &Stack{Threads: waitingTh, Idle: waitIdle, Top: m[1] + " (" + m[2] + ")", Host: host, Line: n}
				waitingTh = nil
			}
			if stack.Collective == "" && collectives[m[1]] && strings.Contains(m[2], "distributed_c10d.py") {
				stack.Collective = m[1]
			}
			return
		}
		if stack != nil {
			endStack()
		}
	})
	endStack()
	if pending != "" {
		e.read(pending, pendingAt, host, &inRAS, &inJob)
	}
	e.Lines = n
	if e.Cut > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%s: %s longer than %d bytes read in part", name, plural(e.Cut, "line"), MaxLine))
	}
	if e.BadHosts > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%s: %s skipped: the host is no node name", name, plural(e.BadHosts, "evidence line")))
	}
	if err != nil {
		return e, fmt.Errorf("reading %s after line %d: %w", name, n, err)
	}
	return e, nil
}

// readProc reads a procs line, "PID STATE WCHAN RANK ARGS".
func readProc(host, line string, n int) (Proc, bool) {
	f := strings.SplitN(strings.TrimSpace(line), " ", 5)
	if len(f) < 4 {
		return Proc{}, false
	}
	pid := atoi(f[0])
	if pid <= 0 || len(f[1]) != 1 {
		return Proc{}, false
	}
	p := Proc{Host: host, PID: pid, State: f[1], Wchan: f[2], Rank: atoi(f[3]), Line: n}
	if len(f) == 5 {
		p.Args = strings.TrimSpace(f[4])
	}
	return p, true
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func atoi64(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return v
}

func atoi(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return v
}

// read takes one (joined) line.
func (e *Evidence) read(line string, n int, host string, inRAS, inJob *bool) {
	if m := watchdogRe.FindStringSubmatch(line); m != nil {
		w := Wait{Rank: atoi(m[1]), Seq: atoi64(m[2]), Op: m[3], Numel: -1, TimeoutMS: atoi64(m[5]), RanMS: atoi64(m[6]), Line: n}
		if m[4] != "" {
			w.Numel = atoi64(m[4])
		}
		e.Waits = append(e.Waits, w)
		return
	}
	if m := progressRe.FindStringSubmatch(line); m != nil {
		e.Progress = append(e.Progress, Progress{Rank: atoi(m[1]), Seq: atoi64(m[2]), LastEnqueued: atoi64(m[3]), LastCompleted: atoi64(m[4]), Line: n})
		return
	}
	if strings.Contains(line, " NCCL WARN ") {
		e.Warns++
		if m := ibRe.FindStringSubmatch(line); m != nil {
			e.IB = append(e.IB, IBTimeout{Host: m[1], Peer: m[2], Line: n})
		}
		return
	}
	if m := xidRe.FindStringSubmatch(line); m != nil {
		e.XIDs = append(e.XIDs, XID{Host: host, PCI: strings.ToLower(m[1]), Code: atoi(m[2]), Line: n})
		return
	}
	t := strings.TrimSpace(line)
	if t == "Job summary" {
		*inRAS, *inJob = true, true
		if e.RAS == nil {
			e.RAS = &RAS{Counts: map[int64]int{}, Line: n}
		}
		return
	}
	if !*inRAS {
		return
	}
	r := e.RAS
	if *inJob {
		if m := jobRowRe.FindStringSubmatch(line); m != nil {
			r.Nodes, r.Ranks = atoi(m[1]), atoi(m[5])
			*inJob = false
		}
		return
	}
	if m := commRowRe.FindStringSubmatch(line); m != nil && r.Status == "" {
		r.Status, r.Errors = m[1], m[2]
	} else if m := rasOpRe.FindStringSubmatch(line); m != nil {
		r.Op = m[1]
	} else if m := rasCountRe.FindStringSubmatch(line); m != nil {
		r.Counts[atoi64(m[2])] += atoi(m[1])
	} else if m := rasRankRe.FindStringSubmatch(line); m != nil {
		r.Listed = append(r.Listed, RASRank{Rank: atoi(m[1]), GPU: atoi(m[2]), PID: atoi(m[3]), Node: m[4]})
	}
}

// Suspect is a node the evidence names, the ranks on it and why.
type Suspect struct {
	// Host is the node as the evidence names it (a host name or address).
	Host string
	// Ranks are the ranks the evidence names on it, ascending; may be
	// empty (an XID names a GPU, not a rank).
	Ranks []int
	// Reason says what named it, in words for a verdict.
	Reason string
}

// Suspect returns the node this file's evidence names, or nil. Only
// evidence that points at one node names it: a driver XID (host is the
// file's node, given by the caller), or a RAS mismatch whose listed
// ranks, all on one node, are the ones behind. A symmetric watchdog
// timeout, an IB timeout (a link, not an end) or a RAS report of ranks
// ahead names none.
func (e Evidence) Suspect(host string) *Suspect {
	if s := e.Suspects(host); len(s) > 0 {
		return &s[0]
	}
	return nil
}

// Suspects returns every node the evidence names, in the order first
// named (see Suspect): a node with an XID, a node where a process of the
// test is stopped (T) or held in the kernel (D) when the time ran out, a
// RAS mismatch's node. host is the node a file without evidence lines of
// its own was read on ("" when unknown).
func (e Evidence) Suspects(host string) []Suspect {
	var out []Suspect
	at := map[string]int{}
	add := func(h, why string) {
		if i, ok := at[h]; ok {
			if !strings.Contains(out[i].Reason, why) {
				out[i].Reason += "; " + why
			}
			return
		}
		at[h] = len(out)
		out = append(out, Suspect{Host: h, Reason: why})
	}
	for _, x := range e.XIDs {
		h := x.Host
		if h == "" {
			h = host
		}
		if h != "" {
			add(h, fmt.Sprintf("%s GPU %s XID %d", h, x.PCI, x.Code))
		}
	}
	// The stuck processes of each host, with the ranks they are.
	var hosts []string
	stuck := map[string][]Proc{}
	for _, p := range e.Procs {
		if p.Stuck() {
			if stuck[p.Host] == nil {
				hosts = append(hosts, p.Host)
			}
			stuck[p.Host] = append(stuck[p.Host], p)
		}
	}
	for _, h := range hosts {
		ps := stuck[h]
		var ranks []int
		for _, p := range ps {
			if p.Rank >= 0 {
				ranks = append(ranks, p.Rank)
			}
		}
		sort.Ints(ranks)
		p := ps[0]
		what := "stopped (state T)"
		if p.State == "D" {
			what = "held in the kernel (state D, in " + p.Wchan + ")"
		}
		why := fmt.Sprintf("%s pid %d (%s) %s", h, p.PID, short(p.Args), what)
		if len(ps) > 1 {
			why += fmt.Sprintf(", and %d more of its processes", len(ps)-1)
		}
		if len(ranks) > 0 {
			why = fmt.Sprintf("ranks %s (%s) never went on: ", Ranges(ranks), h) + why
		}
		add(h, why)
		out[at[h]].Ranks = ranks
	}
	if s := e.rasSuspect(); s != nil {
		add(s.Host, s.Reason)
		out[at[s.Host]].Ranks = s.Ranks
	}
	return out
}

// short cuts a command line for a reason: its program and first words.
func short(args string) string {
	f := strings.Fields(args)
	if len(f) > 3 {
		f = append(f[:3], "...")
	}
	return strings.Join(f, " ")
}

// rasSuspect is a RAS mismatch's node when its listed ranks are behind.
func (e Evidence) rasSuspect() *Suspect {
	if r := e.RAS; r != nil && len(r.Listed) > 0 {
		at, ok := r.listedAt()
		behind := ok
		for c := range r.Counts {
			if c < at {
				behind = false
			}
		}
		node := r.Listed[0].Node
		for _, l := range r.Listed {
			if l.Node != node {
				return nil
			}
		}
		if behind {
			ranks := make([]int, 0, len(r.Listed))
			for _, l := range r.Listed {
				ranks = append(ranks, l.Rank)
			}
			sort.Ints(ranks)
			return &Suspect{Host: node, Ranks: ranks, Reason: fmt.Sprintf("ranks %s (%s) launched %s only up to operation %d, the others further (NCCL RAS)", Ranges(ranks), node, r.Op, at)}
		}
	}
	return nil
}

// Merge adds o's evidence to e's (the evidence of several files, one
// node's each), o's lines numbered as in its own file.
func (e *Evidence) Merge(o Evidence) {
	e.Waits = append(e.Waits, o.Waits...)
	e.Progress = append(e.Progress, o.Progress...)
	e.IB = append(e.IB, o.IB...)
	e.Warns += o.Warns
	if e.RAS == nil {
		e.RAS = o.RAS
	}
	e.Stacks = append(e.Stacks, o.Stacks...)
	e.XIDs = append(e.XIDs, o.XIDs...)
	e.Procs = append(e.Procs, o.Procs...)
	for h, g := range o.GPUs {
		if e.GPUs == nil {
			e.GPUs = map[string][]string{}
		}
		e.GPUs[h] = append(e.GPUs[h], g...)
	}
	e.Notes = append(e.Notes, o.Notes...)
	for _, n := range o.Nodes {
		if !slices.Contains(e.Nodes, n) {
			e.Nodes = append(e.Nodes, n)
		}
	}
	e.Lines += o.Lines
}

func dedup(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// Ranges writes ascending ranks as "8-15" or "0, 3-4".
func Ranges(r []int) string {
	var parts []string
	for i := 0; i < len(r); {
		j := i
		for j+1 < len(r) && r[j+1] == r[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(r[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", r[i], r[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// Summary says in one line what the evidence shows, "" when nothing:
// "ranks 0, 4 timed out in ALLREDUCE SeqNum 1580 after 600 s".
func (e Evidence) Summary() string {
	var parts []string
	if len(e.Waits) > 0 {
		w := e.Waits[0]
		var ranks []int
		seen := map[int]bool{}
		for _, x := range e.Waits {
			if !seen[x.Rank] {
				seen[x.Rank] = true
				ranks = append(ranks, x.Rank)
			}
		}
		sort.Ints(ranks)
		parts = append(parts, fmt.Sprintf("ranks %s timed out in %s SeqNum %d after %d s", Ranges(ranks), w.Op, w.Seq, w.TimeoutMS/1000))
	}
	if e.Warns > 0 {
		parts = append(parts, fmt.Sprintf("%d NCCL WARN lines", e.Warns))
	}
	if len(e.IB) > 0 {
		parts = append(parts, fmt.Sprintf("%s: IB completion status 12 (retry exceeded) from peer %s", e.IB[0].Host, e.IB[0].Peer))
	}
	if r := e.RAS; r != nil {
		s := fmt.Sprintf("NCCL RAS: %d ranks on %d nodes %s %s", r.Ranks, r.Nodes, r.Status, r.Errors)
		if r.Op != "" && len(r.Counts) > 1 {
			s += " (" + r.Op + " counts differ)"
		}
		parts = append(parts, s)
	}
	if len(e.Stacks) > 0 {
		out := 0
		for _, s := range e.Stacks {
			if s.Collective == "" {
				out += len(s.Threads)
			}
		}
		parts = append(parts, fmt.Sprintf("%d stacks, %d outside a collective", e.threads(), out))
	}
	if len(e.XIDs) > 0 {
		parts = append(parts, fmt.Sprintf("%d XID lines", len(e.XIDs)))
	}
	if len(e.Procs) > 0 {
		hosts := map[string]bool{}
		for _, p := range e.Procs {
			hosts[p.Host] = true
		}
		parts = append(parts, fmt.Sprintf("%d processes of the test on %d nodes", len(e.Procs), len(hosts)))
	}
	return strings.Join(parts, "; ")
}

func (e Evidence) threads() int {
	n := 0
	for _, s := range e.Stacks {
		n += len(s.Threads)
	}
	return n
}
