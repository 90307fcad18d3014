package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// writeInPieces writes in through a Writer of r in writes of the given
// sizes (the last repeated), as a pipe from a benchmark delivers it.
func writeInPieces(t *testing.T, r *Redactor, in string, sizes ...int) string {
	t.Helper()
	var out bytes.Buffer
	w := r.NewWriter(&out)
	for i, k := 0, 0; i < len(in); k++ {
		n := sizes[min(k, len(sizes)-1)]
		end := min(i+n, len(in))
		_, err := w.Write([]byte(in[i:end]))
		assert.NilError(t, err)
		i = end
	}
	assert.NilError(t, w.Close())
	return out.String()
}

// A line longer than the Writer holds (a -J JSON on one line, a tool's
// dump) is cut; a secret's name and its value on either side of a cut are
// still masked together, and so are bare tokens and URLs cut in half.
func TestLongLineCutBetweenNameAndValue(t *testing.T) {
	const secret = "plantedLongLineSecret0123"
	filler := strings.Repeat("x", maxPending)
	cases := []struct {
		name, head, tail string // the write boundary falls between head and tail
		want             string
	}{
		{"NAME= | value", filler + ` "HF_TOKEN=`, secret + `","NCCL_DEBUG=INFO"]` + "\n", ` "HF_TOKEN=[REDACTED]","NCCL_DEBUG=INFO"]` + "\n"},
		{"NAME | =value", filler + ` DB_PASSWORD`, `=` + secret + " next\n", ` DB_PASSWORD=[REDACTED] next` + "\n"},
		{"NAME: | value", filler + ` client-key-data: `, secret + "\n", ` client-key-data: [REDACTED]` + "\n"},
		{"--password | value", filler + ` --password `, secret + " -g 8\n", ` --password [REDACTED] -g 8` + "\n"},
		{"Bearer | value", filler + ` Authorization: Bearer `, secret + "\n", ` Authorization: Bearer [REDACTED]` + "\n"},
		{"token cut in half", filler + ` ghp_plantedGhClassic`, `Pat11111111111111111 done` + "\n", ` [REDACTED] done` + "\n"},
		{"URL cut in half", filler + ` https://ci:planted`, `LongLineSecret0123@host/x` + "\n", ` https://ci:[REDACTED]@host/x` + "\n"},
		// Round two's forms whose masks reach past what their regular
		// expressions match: a cookie list, a URL's password, a PuTTY key
		// in a JSON string.
		{"Cookie: | pairs", filler + ` Cookie: `, `a=1; s=` + secret + "\n", ` Cookie: a=[REDACTED]; s=[REDACTED]` + "\n"},
		{"Cookie: a=1; | pair", filler + ` Cookie: a=1; `, `s=` + secret + "\n", ` Cookie: a=[REDACTED]; s=[REDACTED]` + "\n"},
		{"redis://: | password", filler + ` redis://:`, secret + `@r1:6379/0` + "\n", ` redis://:[REDACTED]@r1:6379/0` + "\n"},
		{"name | value", filler + ` {"name":"HF_TOKEN",`, `"value":"` + secret + `"}` + "\n", ` {"name":"HF_TOKEN","value":"[REDACTED]"}` + "\n"},
		{"Private-Lines | lines", filler + ` "Private-Lines: 1`, `\n` + secret + `\nPrivate-MAC: 00"` + "\n", ` "Private-Lines: 1\n[REDACTED]\nPrivate-MAC: 00"` + "\n"},
		{"docker login -p | value", filler + ` docker login -u ci -p `, secret + " nvcr.io\n", ` docker login -u ci -p [REDACTED] nvcr.io` + "\n"},
		{"Signature= | value", filler + ` ?Expires=1&Signature=`, secret + "&Key-Pair-Id=K2\n", ` ?Expires=1&Signature=[REDACTED]&Key-Pair-Id=K2` + "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.head + c.tail
			for _, sizes := range [][]int{{len(c.head), len(c.tail)}, {32 << 10}, {len(c.head) - 3, 1}} {
				out := writeInPieces(t, nil, in, sizes...)
				assert.Assert(t, !strings.Contains(out, secret) && !strings.Contains(out, "LongLineSecret0123"), "sizes %v: secret after the cut survives", sizes)
				assert.Assert(t, strings.HasSuffix(out, c.want), "sizes %v: ends %q", sizes, out[max(0, len(out)-120):])
				assert.Equal(t, strings.Count(out, "x"), len(filler)+strings.Count(c.want, "x"), "sizes %v: filler lost or doubled", sizes)
			}
		})
	}
}

// A secret value longer than what the Writer keeps across a cut is masked
// up to the cut and on after it, through its end: conservative, never the
// rest of the value in clear.
func TestLongValueAcrossCuts(t *testing.T) {
	value := strings.Repeat("s3cr3t", 3*maxPending/6)
	in := "export X_TOKEN=" + value + " && run\n"
	out := writeInPieces(t, nil, in, 64<<10)
	assert.Assert(t, !strings.Contains(out, "s3cr3t"), "%d bytes of the value survive", strings.Count(out, "s3cr3t")*6)
	assert.Assert(t, strings.HasPrefix(out, "export X_TOKEN=[REDACTED]"), out[:min(len(out), 80)])
	assert.Assert(t, strings.HasSuffix(out, " && run\n"), out[max(0, len(out)-80):])
}

// A PEM private key is masked from its BEGIN line through its END line,
// however the lines arrive.
func TestPEMAcrossWrites(t *testing.T) {
	in := "before\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIPlantedEcKeyLine1\nAwEHoUQDQgAEPlantedEcKeyLine2\n-----END EC PRIVATE KEY-----\nafter MHcC\n"
	want := "before\n-----BEGIN EC PRIVATE KEY-----\n[REDACTED]\n[REDACTED]\n-----END EC PRIVATE KEY-----\nafter MHcC\n"
	for _, n := range []int{1, 3, 7, len(in)} {
		assert.Equal(t, writeInPieces(t, nil, in, n), want, "writes of %d", n)
	}
	assert.Equal(t, String(in), want)
	// A key whose END never comes (a log cut short) stays masked to the end.
	cut := "-----BEGIN PRIVATE KEY-----\nMIIEvPlanted1\nMIIEvPlanted2"
	assert.Equal(t, writeInPieces(t, nil, cut, 5), "-----BEGIN PRIVATE KEY-----\n[REDACTED]\n[REDACTED]")
	// A certificate is public: left alone.
	cert := "-----BEGIN CERTIFICATE-----\nMIIC0zCCAbugAwIBAgIJ\n-----END CERTIFICATE-----\n"
	assert.Equal(t, String(cert), cert)
}

// A Stream writes each complete line at once (live progress, errors before
// a crash) and holds only an unfinished one.
func TestStreamWritesLinesAtOnce(t *testing.T) {
	var out bytes.Buffer
	w := (*Redactor)(nil).Stream(&out)
	_, err := w.Write([]byte("line one DB_PASS=hunter2\npartial "))
	assert.NilError(t, err)
	assert.Equal(t, out.String(), "line one DB_PASS=[REDACTED]\n")
	_, err = w.Write([]byte("ends GH_PAT=ghp_x\n"))
	assert.NilError(t, err)
	assert.Equal(t, out.String(), "line one DB_PASS=[REDACTED]\npartial ends GH_PAT=[REDACTED]\n")
	assert.Equal(t, w.Unwrap(), io.Writer(&out))
}

// The masker keeps false positives out of real outputs: every recording,
// field output and results folder under testdata, and every shipped SKU
// file, goes through it byte for byte (those folders were masked when they
// were made, so what they hold of secrets is masked already).
func TestRealOutputsUnchanged(t *testing.T) {
	files := 0
	for _, root := range []string{"../../testdata/recordings", "../../testdata/field", "../../testdata/seeds", "../../baselines"} {
		assert.NilError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			files++
			got := Bytes(data)
			if !bytes.Equal(got, data) {
				t.Errorf("%s: masking changed it: %s", p, firstDiff(data, got))
			}
			return nil
		}))
	}
	assert.Assert(t, files > 300, "only %d files", files)
}

// firstDiff shows the line where a and b first differ.
func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "line " + itoa(i+1) + ":\n  was " + clip(al[i]) + "\n  now " + clip(bl[i])
		}
	}
	return "line counts differ"
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

func itoa(n int) string {
	var b []byte
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// Clear finds the first line that holds a secret in clear, a key's body
// lines included, and none in a masked output.
func TestClear(t *testing.T) {
	filler := strings.Repeat("#       8             2     float     sum      -1    12.34    0.00    0.00      0\n", 2000)
	cases := []struct {
		in   string
		want int
	}{
		{"", 0}, // an empty log of a killed run
		{filler, 0},
		{filler + "export DB_PASS=hunter2\n", 2001},
		{"a\n-----BEGIN RSA PRIVATE KEY-----\n" + filler, 3},
		{"a\nDB_PASS=[REDACTED]\n-----BEGIN RSA PRIVATE KEY-----\n[REDACTED]\n-----END RSA PRIVATE KEY-----\n", 0},
		{strings.Repeat("x", 3*chunkSize) + " ghp_plantedGhClassicPat11111111111111111\n", 1},
		{"no newline at the end AKIAPLANTEDAWSKEY666", 1},
	}
	for _, c := range cases {
		got, err := (*Redactor)(nil).Clear(strings.NewReader(c.in))
		assert.NilError(t, err)
		assert.Equal(t, got, c.want, c.in[:min(len(c.in), 60)])
	}
}

// Every format of the corpus, its lines written in pieces of any size, is
// masked as a whole string is: what a line leaves open (a YAML block, a
// key's base64, a flag's or a header's value on the next line, a quoted
// value of many lines) is carried across writes.
func TestCorpusThroughWriter(t *testing.T) {
	for _, c := range corpus(t) {
		for _, in := range []string{c.Line + "\n", shellEnv(c.Env) + "\n" + c.Line} {
			want := String(in)
			for _, n := range []int{1, 3, 7, len(in)} {
				assert.Equal(t, writeInPieces(t, nil, in, n), want, "%s in writes of %d", c.Name, n)
			}
		}
	}
}

// A word value longer than the Writer keeps across a cut, holding the
// brackets and quotes a word runs through, is masked up to the cut and
// dropped after it up to its end, where the rest of the line (a JSON's
// structure) goes on.
func TestLongWordAcrossCuts(t *testing.T) {
	value := strings.Repeat(`s3cr]t"x'y}z`, 3*maxPending/12)
	for _, c := range []struct{ in, tail string }{
		{"export X_TOKEN=" + value + " && run\n", " && run\n"},
		{`{"cmd":"x --token=` + value + `","n":1}` + "\n", `","n":1}` + "\n"},
	} {
		out := writeInPieces(t, nil, c.in, 64<<10)
		assert.Assert(t, !strings.Contains(out, "s3cr"), "%d bytes of the value survive", strings.Count(out, "s3cr")*12)
		assert.Assert(t, strings.HasSuffix(out, c.tail), out[max(0, len(out)-80):])
		if strings.HasPrefix(c.in, "{") {
			assert.Assert(t, json.Valid([]byte(out)), out)
		}
	}
}

// The Writer's first cut of a long line written 32 KiB at a time falls at
// firstCut: a secret whose name or scheme lies just before it, and whose
// mask reaches past what its rule's regular expression matches (a cookie
// list, a URL's password, a PuTTY key's lines in a JSON string), is still
// masked whole.
func TestCutInsideReachingMasks(t *testing.T) {
	const secret = "plantedCutSecret0123"
	firstCut := 33*(32<<10) - minKeep
	for _, c := range []struct{ head, tail string }{
		{` Cookie: a=1; s=`, secret + ` x`},
		{` Cookie: `, `a=1; s=` + secret + ` x`},
		{` redis://:`, secret + `@r1:6379/0 x`},
		{` https://ci:pa/`, secret + `@git.example.com/r x`},
		{` "Private-Lines: 1\n`, secret + `\nPrivate-MAC: 00" x`},
		{` {"value":"`, secret + `","name":"HF_TOKEN"} x`},
	} {
		for _, at := range []int{len(c.head) - 1, len(c.head), len(c.head) + 3} {
			in := strings.Repeat("x", firstCut-at) + c.head + c.tail + strings.Repeat("y", minKeep+32<<10) + "\n"
			out := writeInPieces(t, nil, in, 32<<10)
			assert.Check(t, !strings.Contains(out, secret), "%q cut %d bytes in: %q", c.head, at, out[firstCut-at-20:firstCut-at+len(c.head)+len(c.tail)+20])
		}
	}
}
