package redact

import (
	"io/fs"
	"os"
	"path/filepath"
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

// Every real output under testdata/recordings (logs with NCCL INFO lines,
// -J JSONs with their env arrays, results folders), masked file by file:
// the lines that hold hints and so meet the rules.
func BenchmarkRecordings(b *testing.B) {
	var files [][]byte
	var n int64
	err := filepath.WalkDir("../../testdata/recordings", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		files = append(files, data)
		n += int64(len(data))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	for b.Loop() {
		for _, f := range files {
			Bytes(f)
		}
	}
}

// The long log masked by a Redactor that knows secret values (what check
// and run mask with: the environment's), some of its lines holding
// percent signs, ampersands and backslashes that send a line to the
// normalised view.
func BenchmarkLongLogKnown(b *testing.B) {
	data, err := os.ReadFile("../../testdata/recordings/h200-1x2-healthy/nccl.all_reduce/all_reduce.log")
	if err != nil {
		b.Fatal(err)
	}
	head, rest, _ := strings.Cut(string(data), "#       size")
	rows := rest[strings.Index(rest, "\n")+1:]
	rows = rows[:strings.Index(rows, "# Out of bounds")]
	rows += "# progress 50%2F100 &#160; \\u00e9\n"
	log := []byte(head + strings.Repeat(rows, 20000))
	r := FromEnv([]string{"HF_TOKEN=hf_plantedBenchToken0000000000000000", "DB_PASSWORD=plantedBenchPw1"}, nil)
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		r.Bytes(log)
	}
}
