package telemetry

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"gotest.tools/v3/assert"
)

// A sampler stream that never ends its line must not fill sample.sh's
// memory (its read holds a whole line) nor lose the samples after it:
// the script cuts every line at cutWidth bytes, Parse counts the pieces
// in a note and reads on; a stream stopped mid-line is said to be. The
// fake nvidia-smi prints the H200's recorded CSV, then 1 MB without a
// line end, then either more samples or nothing more (until TERM).
func TestSampleScriptEndlessLine(t *testing.T) {
	if _, err := exec.LookPath("mkfifo"); err != nil {
		t.Skip("no mkfifo")
	}
	if _, err := exec.LookPath("fold"); err != nil {
		t.Skip("no fold")
	}
	rec, err := filepath.Abs("../../testdata/recordings/h200x1-2026-12-01/smi/query-gpu.csv")
	assert.NilError(t, err)
	const big = 1 << 20
	for _, c := range []struct {
		name string
		// after is what the fake tool does after its 1 MB without a line
		// end; exec, so that TERM reaches what holds the FIFO open.
		after string
		// samplesAfter: rows sampled after the long line, to wait for.
		samplesAfter int
		wantNotes    []string
	}{
		{"line ends, samples follow", `echo; exec sh -c 'while :; do sed -n 2p "$0"; sleep 0.05; done' ` + strconv.Quote(rec), 5,
			[]string{"node0: 1 lines of nvidia-smi output of 4096 bytes or more cut and not read (a stream without line ends?)"}},
		{"line never ends", `exec sleep 600`, 0,
			[]string{"node0: 1 lines of nvidia-smi output of 4096 bytes or more cut and not read (a stream without line ends?)",
				"node0: nvidia-smi output ended mid-line: its last line not read"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin, tmp := t.TempDir(), t.TempDir()
			pids := filepath.Join(bin, "pids")
			// 1 MB and 1 byte: 256 pieces of 4096 bytes, then 1 byte.
			fakeTool(t, bin, "nvidia-smi", fmt.Sprintf(`echo $$ >> %[1]q
case "$*" in
*-lms*) cat %[2]q; head -c %[3]d /dev/zero | tr '\0' x; %[4]s ;;
esac
`, pids, rec, big+1, c.after))
			fakeTool(t, bin, "dmesg", ":")
			cmd := exec.Command("/bin/sh", "-c", Script, "gpuaccept-telemetry", "100", "0")
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "GPUACCEPT_NODE_NAME=node0", "TMPDIR="+tmp)
			out, err := cmd.StdoutPipe()
			assert.NilError(t, err)
			cmd.Stderr = cmd.Stdout
			assert.NilError(t, cmd.Start())
			// Its own process group, so that a stuck run is killed whole
			// (a child holding the pipe would else keep the read waiting).
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			kill := time.AfterFunc(60*time.Second, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			defer kill.Stop()
			var log strings.Builder
			br := bufio.NewReaderSize(out, 1<<16)
			// fold holds back its last piece until it knows more follows:
			// the 256th comes with the line's end or at the stream's.
			const shown = big/cutWidth - 1
			longest, pieces, after := 0, 0, 0
			for pieces < shown || after < c.samplesAfter {
				l, err := br.ReadString('\n')
				log.WriteString(l)
				if err != nil {
					t.Fatalf("the script ended before %d pieces and %d samples after them (%d, %d): %v", shown, c.samplesAfter, pieces, after, err)
				}
				longest = max(longest, len(l))
				if strings.HasPrefix(l, "node0|nvsmi|xxxx") {
					pieces++
				}
				if pieces >= shown && strings.HasPrefix(l, "node0|nvsmi|0, ") {
					after++
				}
			}
			assert.NilError(t, cmd.Process.Signal(syscall.SIGTERM))
			for {
				l, err := br.ReadString('\n')
				log.WriteString(l)
				longest = max(longest, len(l))
				if err != nil {
					break
				}
			}
			assert.NilError(t, cmd.Wait(), "the script's status after TERM")
			// What the script's read held: one piece and its tag, never
			// the 1 MB line.
			assert.Assert(t, longest <= len("node0|nvsmi|@partial ")+cutWidth+1, "a line of %d bytes", longest)
			for _, l := range strings.Fields(mustRead(t, pids)) {
				pid, err := strconv.Atoi(l)
				assert.NilError(t, err)
				gone := false
				for i := 0; i < 50 && !gone; i++ {
					gone = !alive(pid)
					time.Sleep(20 * time.Millisecond)
				}
				assert.Assert(t, gone, "nvidia-smi (pid %d) still runs after the script ended", pid)
			}
			left, err := os.ReadDir(tmp)
			assert.NilError(t, err)
			assert.Equal(t, len(left), 0, "the script left its FIFO folder behind")

			tel, sampler, err := ReadLog(strings.NewReader(log.String()))
			assert.NilError(t, err)
			assert.Assert(t, sampler)
			assert.Equal(t, len(tel.GPUs), 1)
			assert.Equal(t, tel.GPUs[0].GPU, "0")
			assert.Assert(t, tel.GPUs[0].Samples >= 1+c.samplesAfter, "%d samples", tel.GPUs[0].Samples)
			assert.DeepEqual(t, tel.Notes, c.wantNotes)
		})
	}
}

// Identity values come from the node: the GPU index is trimmed and must
// be a whole number (else the row is unparsed and counted), a uuid,
// serial or bus id of other bytes than letters, digits and -_.: is
// dropped with a note naming the column, not the value; a host name so
// made is refused, its GPUs left to the planned node's name.
func TestHostileIdentity(t *testing.T) {
	const head = "timestamp, index, uuid, serial, pci.bus_id, utilization.gpu [%]\n"
	const good = "2026/12/08 00:31:02.123, 0, GPU-5a1e, 1654922005512, 00000000:00:06.0, 3 %\n"
	for _, c := range []struct {
		name, host, row string
		wantHost        string
		wantGPU         []string
		wantUUID        string
		wantNotes       []string
	}{
		{"real nvidia-smi, blank before the index", "node0", good, "node0", []string{"0"}, "GPU-5a1e", nil},
		{"index with a leading zero joins as 0", "node0", "2026/12/08 00:31:02.123, 00, GPU-5a1e, 1, 00000000:00:06.0, 3 %\n", "node0", []string{"0"}, "GPU-5a1e", nil},
		{"negative index", "node0", "2026/12/08 00:31:02.123, -1, GPU-5a1e, 1, 00000000:00:06.0, 3 %\n", "node0", nil, "",
			[]string{`node0: 1 lines of nvidia-smi output could not be read (first: line 3: column 2: "-1" is not a value of its field)`, "node0: the sampler read no sample"}},
		{"index with ESC", "node0", "2026/12/08 00:31:02.123, \x1b[2J0, GPU-5a1e, 1, 00000000:00:06.0, 3 %\n", "node0", nil, "",
			[]string{`node0: 1 lines of nvidia-smi output could not be read (first: line 3: column 2: "\x1b[2J0" is not a value of its field)`, "node0: the sampler read no sample"}},
		{"uuid with markup", "node0", "2026/12/08 00:31:02.123, 0, <script>alert(1)</script>, 1, 00000000:00:06.0, 3 %\n", "node0", []string{"0"}, "",
			[]string{"node0: 1 values of nvidia-smi output dropped (first: line 3: uuid not letters, digits and -_.:)"}},
		{"serial with ESC", "node0", "2026/12/08 00:31:02.123, 0, GPU-5a1e, \x1b]0;pwned\x07, 00000000:00:06.0, 3 %\n", "node0", []string{"0"}, "GPU-5a1e",
			[]string{"node0: 1 values of nvidia-smi output dropped (first: line 3: serial not letters, digits and -_.:)"}},
		{"host with ESC", "n\x1b[31mode0", good, "", []string{"0"}, "GPU-5a1e",
			[]string{"(host name refused): the log's host name is not letters, digits and -_.: (at most 253 bytes): refused, its GPUs are the planned node's"}},
		{"host with markup", "<img src=x onerror=alert(1)>", good, "", []string{"0"}, "GPU-5a1e",
			[]string{"(host name refused): the log's host name is not letters, digits and -_.: (at most 253 bytes): refused, its GPUs are the planned node's"}},
		{"host too long", strings.Repeat("a", 254), good, "", []string{"0"}, "GPU-5a1e",
			[]string{"(host name refused): the log's host name is not letters, digits and -_.: (at most 253 bytes): refused, its GPUs are the planned node's"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := c.host + "|begin|gpuaccept-telemetry 1 start=1800000000 interval_ms=1000\n"
			for _, l := range []string{head, c.row} {
				log += c.host + "|nvsmi|" + l
			}
			log += c.host + "|end|gpuaccept-telemetry: stopped\n"
			tel, sampler, err := ReadLog(strings.NewReader(log))
			assert.NilError(t, err)
			assert.Assert(t, sampler)
			var gpus []string
			for _, g := range tel.GPUs {
				gpus = append(gpus, g.GPU)
				assert.Equal(t, g.Host, c.wantHost)
				assert.Equal(t, g.UUID, c.wantUUID)
			}
			assert.DeepEqual(t, gpus, c.wantGPU)
			assert.DeepEqual(t, tel.Notes, c.wantNotes)
			raw, err := json.Marshal(tel)
			assert.NilError(t, err)
			for _, bad := range []string{"\x1b", `\u001b`, "<script", "<img"} {
				assert.Assert(t, !strings.Contains(string(raw), bad), "%s in %s", bad, raw)
			}
		})
	}
}

// Text a tool printed reaches a note escaped and bounded: an XID line or
// a first line with a terminal sequence, a refused-dmesg reason of 1 MB.
func TestNotesClean(t *testing.T) {
	log := "node0|begin|gpuaccept-telemetry 1 start=1800000000 interval_ms=1000\n" +
		"node0|kernel-log|@refused dmesg: " + strings.Repeat("y", 3000) + "\n" +
		"node0|nvsmi|Failed \x1b[2J to initialize NVML\n" +
		"node0|xid|NVRM: Xid (PCI:0000:99:00): 79, \x1b]0;x\x07\n" +
		"node0|end|gpuaccept-telemetry: stopped\n"
	tel, _, err := ReadLog(strings.NewReader(log))
	assert.NilError(t, err)
	assert.Equal(t, len(tel.Notes), 3, "%q", tel.Notes)
	for _, n := range tel.Notes {
		assert.Assert(t, !strings.ContainsAny(n, "\x1b\x07"), "%q", n)
		assert.Assert(t, len(n) < 500, "a note of %d bytes", len(n))
	}
	assert.Assert(t, strings.Contains(tel.Notes[1], `\x1b]0;x\a`), tel.Notes[1])
	assert.Assert(t, strings.Contains(tel.Notes[2], `Failed \x1b[2J to initialize NVML`), tel.Notes[2])
}

// A reading keeps at most maxSamples samples and counts the rest in a
// note; the identity strings of its samples are one copy, not the lines
// they were cut from.
func TestSampleBound(t *testing.T) {
	defer func(n int) { maxSamples = n }(maxSamples)
	maxSamples = 3
	csv := "timestamp, index, uuid, serial, pci.bus_id, utilization.gpu [%]\n" +
		strings.Repeat("2026/12/08 00:31:02.123, 0, GPU-5a1e, 1654922005512, 00000000:00:06.0, 3 %\n", 5)
	rd, err := ReadNvidiaSMI(strings.NewReader(csv), "node0")
	assert.NilError(t, err)
	assert.Equal(t, len(rd.Samples), 3)
	assert.Equal(t, rd.Dropped, 2)
	assert.Equal(t, unsafe.StringData(rd.Samples[0].UUID), unsafe.StringData(rd.Samples[2].UUID))
	tel, err := ReadTool(strings.NewReader(csv), "node0")
	assert.NilError(t, err)
	assert.DeepEqual(t, tel.Notes, []string{"2 samples of nvidia-smi past the first 3 not kept: ranges, counts and series are of the first"})
}
