package result

import "fmt"

// maxCommand bounds a command line quoted for people (a baseline entry's
// source, a dry run's plan).
const maxCommand = 240

// ShortCommand keeps a long command line (a script passed inline, python3
// -c '...': 8 KB of torchbench.py) readable where people read it: its
// first 80 and last 140 bytes, which hold the program and its arguments,
// around a note of what was left out. results.json and outputs.json keep
// the whole command.
func ShortCommand(c string) string {
	if len(c) <= maxCommand {
		return c
	}
	head, tail := c[:80], c[len(c)-140:]
	return fmt.Sprintf("%s ... (%d bytes left out; results.json has the whole command) ... %s", head, len(c)-len(head)-len(tail), tail)
}
