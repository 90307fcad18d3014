package health

// This file: outputs as people paste them. A file handed to gpuaccept
// check may hold the shell prompt and command before the output ("$
// nvidia-smi -q", "root@node:~# dcgmi diag -r 1", "sh-5.1# /usr/bin/dcgmi
// diag --run 3", "[root@test dir]# ...", a script's sh -x trace "+ nvidia-smi
// -q"), blank lines before a CSV header,
// and each line may carry a log collector's labels (kubectl logs
// --timestamps and --prefix, srun --label: textdiag.PrefixLen). Each line
// is read without its labels and prompt lines are dropped, before the
// output is sniffed and parsed.

import (
	"regexp"
	"strings"

	"github.com/gpuaccept/gpuaccept/plugins/internal/textdiag"
)

// promptLine is a shell prompt followed by a command: a word (user@host:
// dir, sh-5.1, a bracketed [user@host dir]) ending in $, # or %, a blank,
// and the command; or the trace of sh -x ("+ nvidia-smi -q", "++ ..."). No line of the outputs read starts so (a -q line is
// "Key : value", a table row starts with | or +, a kernel line with [ or
// a date, XML with <, JSON with { or [ or a quote).
var promptLine = regexp.MustCompile(`^(?:(?:\[[^\]\n]{1,80}\]|[\w.@:~/-]{0,80})\s?[#$%]|\++)\s+\S`)

// barePrompt is a shell prompt with no command: the line a paste ends with
// when the prompt after the output was copied too ("root@vm:~# "). No line
// of the outputs read is only a word ending in $, # or %.
var barePrompt = regexp.MustCompile(`^(?:\[[^\]\n]{1,80}\]|[\w.@:~/-]{0,80})\s?[#$%]\s*$`)

// pastedLine is the program's own text of a line of a pasted file, and
// false for a shell prompt line.
func pastedLine(text string) (string, bool) {
	t := strings.TrimSuffix(text, "\r")
	t = t[textdiag.PrefixLen(t):]
	if promptLine.MatchString(t) || barePrompt.MatchString(t) {
		return "", false
	}
	return t, true
}
