package k8s

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// A pod hands the files a step wrote (plan.Step.Files) back through its log,
// the one channel every cluster gives a launcher without exec rights: after
// the program ends, each file is printed base64-encoded between these
// marker lines, and splitFiles takes them out of the log again.
const (
	fileBegin = "==> gpuaccept-file "
	fileEnd   = "==> gpuaccept-file-end <=="
)

// sh quotes one word for the pod's /bin/sh.
func sh(s string) string { return rankstart.ShellQuote(s) }

// emitFiles is the script fragment that prints the step's files.
func emitFiles(files []string) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "if [ -f %s ]; then echo %s; base64 %s; echo %s; fi\n",
			sh(f), sh(fileBegin+f+" <=="), sh(f), sh(fileEnd))
	}
	return b.String()
}

// singleScript runs argv in a fresh working folder and prints the files.
func singleScript(argv, files []string, work string) string {
	return "set -u\n" +
		fmt.Sprintf("mkdir -p %s && cd %s || exit 127\n", sh(work), sh(work)) +
		rankstart.ShellJoin(argv) + "\n" +
		"rc=$?\n" +
		emitFiles(files) +
		"exit $rc\n"
}

// NodeNameFile is where a rank pod of several leaves its Node's name
// (GPUACCEPT_NODE_NAME, from the downward API): ranks mpirun starts over
// sshd do not inherit the pod's environment, and a health check must name
// the Node to taint, not the pod.
const NodeNameFile = "/etc/gpuaccept-node-name"

// sshSetup installs the run's key for root's ssh client and sshd, leaves
// the Node's name in NodeNameFile, and starts sshd on sshPort.
func sshSetup() string {
	return fmt.Sprintf(`[ -n "${GPUACCEPT_NODE_NAME:-}" ] && printf '%%s\n' "$GPUACCEPT_NODE_NAME" >%[3]s 2>/dev/null
h=${HOME:-/root}; mkdir -p "$h/.ssh" /run/sshd && chmod 700 "$h/.ssh"
cp %[1]s/id "$h/.ssh/gpuaccept_id" && cp %[1]s/authorized_keys "$h/.ssh/authorized_keys" && chmod 600 "$h/.ssh/gpuaccept_id" "$h/.ssh/authorized_keys" || exit 127
printf 'Host *\n  Port %[2]d\n  IdentityFile ~/.ssh/gpuaccept_id\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' >"$h/.ssh/config"
ssh-keygen -A >/dev/null && /usr/sbin/sshd -p %[2]d || { echo "gpuaccept: cannot start sshd (the image needs openssh-server)" >&2; exit 127; }
`, sshSecretDir, sshPort, NodeNameFile)
}

// leadMPIScript starts sshd, waits until every pod answers over ssh, runs
// mpirun, prints the files and tells the workers to end.
func leadMPIScript(mpirun, files, hosts []string, work string) string {
	var b strings.Builder
	b.WriteString("set -u\n")
	b.WriteString(sshSetup())
	fmt.Fprintf(&b, "mkdir -p %s && cd %s || exit 127\n", sh(work), sh(work))
	b.WriteString("for h in")
	for _, h := range hosts {
		b.WriteString(" " + sh(h))
	}
	b.WriteString(`; do n=0; until ssh -o ConnectTimeout=2 "$h" true 2>/dev/null; do n=$((n+1)); if [ $n -ge 600 ]; then echo "gpuaccept: $h did not answer over ssh in 10 minutes" >&2; exit 127; fi; sleep 1; done; done` + "\n")
	b.WriteString(rankstart.ShellJoin(mpirun) + "\n")
	b.WriteString("rc=$?\n")
	b.WriteString(emitFiles(files))
	if len(hosts) > 1 {
		b.WriteString("for h in")
		for _, h := range hosts[1:] {
			b.WriteString(" " + sh(h))
		}
		fmt.Fprintf(&b, "; do ssh \"$h\" touch %s; done\n", doneFile)
	}
	b.WriteString("exit $rc\n")
	return b.String()
}

// workerMPIScript starts sshd and waits for the lead to say it is done.
func workerMPIScript(work string) string {
	return "set -u\n" + sshSetup() +
		fmt.Sprintf("mkdir -p %s\nwhile [ ! -e %s ]; do sleep 1; done\n", sh(work), doneFile)
}

// indexedScript picks the lead's or a worker's script by the Indexed Job's
// JOB_COMPLETION_INDEX.
func indexedScript(lead, worker string) string {
	return "if [ \"${JOB_COMPLETION_INDEX:-0}\" = 0 ]; then\n" + lead + "else\n" + worker + "fi\n"
}

// splitFiles copies a pod's log from r to log without the file blocks
// emitFiles printed, and hands each decoded file to collect. A block that
// does not decode, or is cut off, stays in the log as it was, so nothing
// the step printed is lost.
func splitFiles(r io.Reader, log io.Writer, collect func(name string, data []byte) error) error {
	br := bufio.NewReader(r)
	var block []string // raw lines of an open block, header first
	var name string
	flush := func() error {
		for _, l := range block {
			if _, err := io.WriteString(log, l); err != nil {
				return err
			}
		}
		block = nil
		return nil
	}
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			trimmed := strings.TrimRight(line, "\r\n")
			switch {
			case block == nil && strings.HasPrefix(trimmed, fileBegin) && strings.HasSuffix(trimmed, " <=="):
				name = strings.TrimSuffix(strings.TrimPrefix(trimmed, fileBegin), " <==")
				block = []string{line}
			case block != nil && trimmed == fileEnd:
				var enc bytes.Buffer
				for _, l := range block[1:] {
					enc.WriteString(strings.TrimSpace(l))
				}
				data, derr := base64.StdEncoding.DecodeString(enc.String())
				if derr != nil || name == "" {
					block = append(block, line)
					if ferr := flush(); ferr != nil {
						return ferr
					}
					continue
				}
				if cerr := collect(name, data); cerr != nil {
					return cerr
				}
				block = nil
			case block != nil:
				block = append(block, line)
			default:
				if _, werr := io.WriteString(log, line); werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF {
			return flush()
		}
		if err != nil {
			return err
		}
	}
}
