package redact

import (
	"os"
	"strings"
	"testing"
)

// A long nccl-tests log (the -N cycles of a soak run: its header once,
// then rows) passes the masking at the speed of its rows.
func BenchmarkLongLog(b *testing.B) {
	data, err := os.ReadFile("../../testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.log")
	if err != nil {
		b.Fatal(err)
	}
	head, rest, _ := strings.Cut(string(data), "#       size")
	rows := rest[strings.Index(rest, "\n")+1:]
	rows = rows[:strings.Index(rows, "# Out of bounds")]
	log := []byte(head + strings.Repeat(rows, 20000))
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		Bytes(log)
	}
}
