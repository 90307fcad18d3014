# Reads `go test -json` and prints what plain `go test` prints (each
# package's ok/FAIL line, the output of failed tests and packages), then
# how many tests skipped and, per reason, where they would run: the
# integration tests say "scripts/testenv.sh up SERVICE" when their service
# is missing. POSIX awk; used by scripts/test.sh.

# field returns the JSON string value of key in line, unescaped ("" when
# absent). go test -json writes one object a line, keys in a fixed order,
# with Go's JSON escapes in strings.
function field(line, key,    i, s, c, out, n) {
	i = index(line, "\"" key "\":\"")
	if (i == 0)
		return ""
	s = substr(line, i + length(key) + 4)
	out = ""
	n = length(s)
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (c == "\"")
			break
		if (c == "\\") {
			i++
			c = substr(s, i, 1)
			if (c == "n") c = "\n"
			else if (c == "t") c = "\t"
			else if (c == "r") c = ""
			else if (c == "u") { c = "?"; i += 4 }
		}
		out = out c
	}
	return out
}

{
	action = field($0, "Action")
	pkg = field($0, "Package")
	test = field($0, "Test")
	key = pkg " " test
	if (action == "build-output") {
		# A package that does not build: the compiler's messages.
		printf "%s", field($0, "Output")
		next
	}
	if (action == "output") {
		text = field($0, "Output")
		if (test == "") {
			# Package lines: "ok  pkg 1.2s", "FAIL", a build error.
			if (text != "PASS\n" && text !~ /^=== / && text !~ /^--- (PASS|SKIP)/)
				printf "%s", text
			next
		}
		if (text !~ /^=== /)
			buf[key] = buf[key] text
		if (text ~ /^ +[^ ]+\.go:[0-9]+: /) {
			sub(/^ +[^ ]+\.go:[0-9]+: /, "", text)
			sub(/\n$/, "", text)
			reason[key] = text
		}
		next
	}
	if (test == "" || action == "run" || action == "pause" || action == "cont" || action == "start")
		next
	if (action == "fail")
		printf "%s", buf[key]
	if (action == "skip") {
		skipped++
		r = reason[key]
		if (match(r, /scripts\/testenv\.sh up [a-z0-9]+/))
			where = "with " substr(r, RSTART, RLENGTH)
		else if (r == "")
			where = "(no reason given)"
		else
			where = r
		if (!(where in count))
			order[++groups] = where
		count[where]++
	}
	delete buf[key]
	delete reason[key]
}

END {
	if (skipped == 0) {
		print "skipped: none"
		exit 0
	}
	printf "skipped: %d test%s; they run:\n", skipped, skipped == 1 ? "" : "s"
	for (i = 1; i <= groups; i++)
		printf "  %4d  %s\n", count[order[i]], order[i]
}
