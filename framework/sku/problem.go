package sku

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxProblems bounds how many problems of one file a Problems error lists.
const MaxProblems = 20

// Problems is every problem found in one SKU file, sorted by line, each
// naming its line and field ("line 148: field unit: ..."). Its Error lists
// the first MaxProblems, one a line, each prefixed with the file, as
// compilers do.
type Problems struct {
	// File is the SKU file's name as given to Parse.
	File string
	// List holds the problems, "line N: field F: ...", sorted by line.
	List []string
}

// Error renders the problems, one a line.
func (p *Problems) Error() string {
	var b strings.Builder
	for i, m := range p.List {
		if i == MaxProblems {
			fmt.Fprintf(&b, "\n%s: and %d more problems", p.File, len(p.List)-MaxProblems)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.File + ": " + m)
	}
	return b.String()
}

var lineRE = regexp.MustCompile(`^line (\d+):`)

// NewProblems sorts errs by the line they name ("line N: ..."; those naming
// none first), drops repeats (an entry's band inherited by each of its
// points) and returns them as a *Problems of file; nil when errs holds no
// error. A *yaml.TypeError or a *Problems counts as one error per message.
func NewProblems(file string, errs []error) error {
	var msgs []string
	seen := map[string]bool{}
	for _, err := range errs {
		if err == nil {
			continue
		}
		var te *yaml.TypeError
		var pe *Problems
		ms := []string{err.Error()}
		switch {
		case errors.As(err, &pe):
			ms = pe.List
		case errors.As(err, &te):
			ms = te.Errors
		}
		for _, m := range ms {
			if !seen[m] {
				seen[m] = true
				msgs = append(msgs, m)
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	line := func(m string) int {
		if sm := lineRE.FindStringSubmatch(m); sm != nil {
			n, _ := strconv.Atoi(sm[1])
			return n
		}
		return 0
	}
	sort.SliceStable(msgs, func(i, j int) bool { return line(msgs[i]) < line(msgs[j]) })
	return &Problems{File: file, List: msgs}
}
