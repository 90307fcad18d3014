package textdiag

// prefixMax bounds how many stacked labels PrefixLen strips: real wrappers
// stack two or three; a hostile line of a million "0: " must not loop on.
const prefixMax = 8

// PrefixLen returns the length in bytes of the labels that launchers and
// log collectors put before the line a program printed, 0 when there is
// none: line[PrefixLen(line):] is the program's own text. It reads only
// the start of line, never allocates and never panics. Recognised, stacked
// in any order (kubectl logs --prefix --timestamps of a pod running mpirun
// --tag-output gives three), each with the blanks before it:
//
//   - kubectl logs --prefix: "[pod/NAME/CONTAINER] "
//   - kubectl logs --timestamps: an RFC 3339 time and one blank,
//     "2024-05-01T12:00:00.123456789Z " or "2024-05-01T12:00:00+02:00 "
//   - Open MPI mpirun --tag-output: "[1,0]<stdout>:", "[1,3]<stderr>:", and
//     PRRTE's "[prterun-host-123@1,0]<stdout>: " (one blank after it kept
//     in the label)
//   - Slurm srun --label: "0: ", " 7: ", "15: "
//   - MPICH and Intel MPI -prepend-rank: "[0] "
//   - torchrun's per-rank prefix: "[default0]:", "[rank3]:"
//   - Ray's prefix of a task's lines on the driver, which SkyPilot's
//     console shows (sky launch, sky logs): "(head, rank=0, pid=3808) ",
//     "(worker1, rank=1, pid=2769, ip=10.100.10.12) ", "(task, pid=12) ",
//     "(pid=12) "; the name is SkyPilot's task name (RayCodeGen in
//     skypilot-org/skypilot sky/backends/task_codegen.py:
//     "{node_name}, rank={rank},"), the rest Ray's print_worker_logs
//     (python/ray/_private/worker.py: "({name} pid={pid}, ip={ip}) ", ip
//     only for other nodes than the driver's), with the ANSI colour codes
//     Ray puts around it when they were kept
//
// Blanks after the last label are not part of it. A CR of a CRLF line end
// is never part of a label.
func PrefixLen[T ~string | ~[]byte](line T) int {
	// Most lines start with a letter or '#': no label.
	if len(line) == 0 {
		return 0
	}
	if c := line[0]; c != '[' && c != ' ' && c != '\t' && c != '(' && c != '\x1b' && (c < '0' || c > '9') {
		return 0
	}
	return prefixLen(line)
}

// prefixLen is PrefixLen after its first byte was found to start a label.
func prefixLen[T ~string | ~[]byte](line T) int {
	n := 0
	for k := 0; k < prefixMax; k++ {
		m := prefixOne(line, n)
		if m == 0 {
			break
		}
		n += m
	}
	return n
}

// prefixOne returns the length of one label starting at line[at:] (blanks
// before it included), or 0.
func prefixOne[T ~string | ~[]byte](line T, at int) int {
	i := at
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i >= len(line) {
		return 0
	}
	var m int
	switch c := line[i]; {
	case c == '[':
		m = prefixBracket(line, i)
	case c == '(' || c == '\x1b':
		m = prefixRay(line, i)
	case c >= '0' && c <= '9':
		if m = prefixTime(line, i); m == 0 {
			m = prefixTask(line, i)
		}
	}
	if m == 0 {
		return 0
	}
	return i - at + m
}

// prefixDigits counts the ASCII digits at line[i:].
func prefixDigits[T ~string | ~[]byte](line T, i int) int {
	j := i
	for j < len(line) && line[j] >= '0' && line[j] <= '9' {
		j++
	}
	return j - i
}

// prefixAt reports whether line[i:] starts with s.
func prefixAt[T ~string | ~[]byte](line T, i int, s string) bool {
	if len(line)-i < len(s) {
		return false
	}
	for k := 0; k < len(s); k++ {
		if line[i+k] != s[k] {
			return false
		}
	}
	return true
}

// prefixTask matches srun --label's "N: " at line[i:] (a digit there).
func prefixTask[T ~string | ~[]byte](line T, i int) int {
	d := prefixDigits(line, i)
	if d > 6 || !prefixAt(line, i+d, ": ") {
		return 0
	}
	return d + 2
}

// prefixTime matches an RFC 3339 date-time and one blank at line[i:]:
// YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM).
func prefixTime[T ~string | ~[]byte](line T, i int) int {
	j := i
	for _, part := range []struct {
		digits int
		sep    byte
	}{{4, '-'}, {2, '-'}, {2, 'T'}, {2, ':'}, {2, ':'}, {2, 0}} {
		if prefixDigits(line, j) != part.digits {
			return 0
		}
		j += part.digits
		if part.sep != 0 {
			if j >= len(line) || line[j] != part.sep {
				return 0
			}
			j++
		}
	}
	if j < len(line) && line[j] == '.' {
		d := prefixDigits(line, j+1)
		if d == 0 {
			return 0
		}
		j += 1 + d
	}
	switch {
	case j < len(line) && line[j] == 'Z':
		j++
	case j < len(line) && (line[j] == '+' || line[j] == '-'):
		if prefixDigits(line, j+1) != 2 || !prefixAt(line, j+3, ":") || prefixDigits(line, j+4) != 2 {
			return 0
		}
		j += 6
	default:
		return 0
	}
	if j >= len(line) || line[j] != ' ' {
		return 0
	}
	return j + 1 - i
}

// prefixBracket matches the labels that start with '[' at line[i:].
func prefixBracket[T ~string | ~[]byte](line T, i int) int {
	// The closing ']' within a short distance; labels never hold blanks.
	end := -1
	for j := i + 1; j < len(line) && j-i < 256; j++ {
		c := line[j]
		if c == ']' {
			end = j
			break
		}
		if c == ' ' || c == '\t' || c == '[' {
			return 0
		}
	}
	if end < 0 || end == i+1 {
		return 0
	}
	after := end + 1
	switch {
	case prefixAt(line, after, "<stdout>:") || prefixAt(line, after, "<stderr>:"):
		// [JOB,RANK]: JOB is digits (Open MPI 4) or PRRTE's name@N.
		comma := -1
		for j := end - 1; j > i; j-- {
			if line[j] == ',' {
				comma = j
				break
			}
		}
		if comma < 0 || comma == i+1 || prefixDigits(line, comma+1) != end-comma-1 || end == comma+1 {
			return 0
		}
		n := after + len("<stdout>:") - i
		if prefixAt(line, i+n, " ") {
			n++
		}
		return n
	case prefixAt(line, i+1, "pod/"):
		// [pod/NAME/CONTAINER]
		slashes := 0
		for j := i + 1; j < end; j++ {
			if line[j] == '/' {
				slashes++
			}
		}
		if slashes != 2 || line[end-1] == '/' || !prefixAt(line, after, " ") {
			return 0
		}
		return after + 1 - i
	case prefixDigits(line, i+1) == end-i-1:
		// [0] of -prepend-rank
		if end-i-1 > 6 || !prefixAt(line, after, " ") {
			return 0
		}
		return after + 1 - i
	case prefixAt(line, after, ":"):
		// [default0]: or [rank3]: letters, then digits.
		j := i + 1
		for j < end && (line[j] >= 'a' && line[j] <= 'z' || line[j] >= 'A' && line[j] <= 'Z' || line[j] == '_') {
			j++
		}
		if j == i+1 || prefixDigits(line, j) != end-j || j == end {
			return 0
		}
		return after + 1 - i
	}
	return 0
}

// prefixSGR counts the bytes of ANSI SGR sequences ("\x1b[2m", "\x1b[36m",
// "\x1b[0m") at line[i:].
func prefixSGR[T ~string | ~[]byte](line T, i int) int {
	j := i
	for j+2 < len(line) && line[j] == '\x1b' && line[j+1] == '[' {
		k := j + 2
		for k < len(line) && k-j < 16 && (line[k] >= '0' && line[k] <= '9' || line[k] == ';') {
			k++
		}
		if k >= len(line) || line[k] != 'm' {
			break
		}
		j = k + 1
	}
	return j - i
}

// prefixRay matches Ray's "(NAME pid=N) " and "(NAME pid=N, ip=A) " at
// line[i:] (NAME and its blank optional), colour codes around the
// parentheses included.
func prefixRay[T ~string | ~[]byte](line T, i int) int {
	j := i + prefixSGR(line, i)
	if j >= len(line) || line[j] != '(' {
		return 0
	}
	end := -1
	for k := j + 1; k < len(line) && k-j < 256; k++ {
		if c := line[k]; c == ')' {
			end = k
			break
		} else if c == '(' || c == '\n' || c == '\r' {
			return 0
		}
	}
	if end < 0 {
		return 0
	}
	// "pid=" starts the parentheses or follows a blank; digits follow it,
	// then ")" or ", ip=" and an address.
	pid := -1
	for k := j + 1; k+4 <= end; k++ {
		if prefixAt(line, k, "pid=") && (k == j+1 || line[k-1] == ' ') {
			pid = k + 4
		}
	}
	if pid < 0 {
		return 0
	}
	d := prefixDigits(line, pid)
	if d == 0 {
		return 0
	}
	if k := pid + d; k != end {
		if !prefixAt(line, k, ", ip=") || k+5 == end {
			return 0
		}
		for k += 5; k < end; k++ {
			if c := line[k]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '.' || c == ':') {
				return 0
			}
		}
	}
	n := end + 1
	n += prefixSGR(line, n)
	if !prefixAt(line, n, " ") {
		return 0
	}
	return n + 1 - i
}
