package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want, line string }{
		{"nccl.all_reduce PASS", "nccl.all_reduce PASS", "nccl.all_reduce PASS"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab", `two\nlines\tand a tab`},
		// A carriage return and an erase-line CSI write over the row.
		{"FAIL\r\x1b[2KALL PASS", `FAIL\r\x1b[2KALL PASS`, `FAIL\r\x1b[2KALL PASS`},
		// OSC (a window title, a hyperlink) ended by BEL or ST.
		{"\x1b]0;title\x07\x1b]8;;http://x\x1b\\", `\x1b]0;title\a\x1b]8;;http://x\x1b\`, `\x1b]0;title\a\x1b]8;;http://x\x1b\`},
		{"back\bspace\x7f", `back\bspace\x7f`, `back\bspace\x7f`},
		// C1 CSI as a rune, and as a byte that is not UTF-8.
		{"\u009b2K", `\u009b2K`, `\u009b2K`},
		{"a\x9bb\xff", `a\x9bb\xff`, `a\x9bb\xff`},
		// Bidi overrides, isolates and marks, invisible format characters.
		{"PASS\u202eLIAF", `PASS\u202eLIAF`, `PASS\u202eLIAF`},
		{"\u2066x\u2069\u200e\u200f\u061c", `\u2066x\u2069\u200e\u200f\u061c`, `\u2066x\u2069\u200e\u200f\u061c`},
		{"zero\u200bwidth\ufeff\u2060", `zero\u200bwidth\ufeff\u2060`, `zero\u200bwidth\ufeff\u2060`},
		{"line\u2028sep", `line\u2028sep`, `line\u2028sep`},
		// What a GPU or a unit name holds stays as it reads.
		{"NVIDIA H200 µs ± 3 °C GB/s ≥ 310.1 — ok", "NVIDIA H200 µs ± 3 °C GB/s ≥ 310.1 — ok", "NVIDIA H200 µs ± 3 °C GB/s ≥ 310.1 — ok"},
	} {
		got := Printable(c.in)
		assert.Equal(t, got, c.want, "%q", c.in)
		assert.Equal(t, Printable(got), got, "escaping twice changes %q", c.in)
		assert.Equal(t, PrintableLine(c.in), c.line, "%q", c.in)
	}
}

func TestPrintableJSON(t *testing.T) {
	v := map[string]string{"name": "x\u202e\u009b\u200b\U000e0001y", "plain": "µs ≥ 1"}
	doc, err := json.Marshal(v)
	assert.NilError(t, err)
	got := PrintableJSON(doc)
	assert.Assert(t, !bytes.ContainsFunc(got, Unprintable), "%q", got)
	assert.Assert(t, bytes.Contains(got, []byte(`\u202e\u009b\u200b\udb40\udc01`)), "%s", got)
	var back map[string]string
	assert.NilError(t, json.Unmarshal(got, &back))
	assert.DeepEqual(t, back, v)
}

// Printed escapes the text it is given, masked, and writes Control's
// sequences as they are.
func TestPrintedWriter(t *testing.T) {
	var b bytes.Buffer
	w := New("s3cr3tvalue").Printed(&b)
	_, err := w.Write([]byte("run\r\x1b[2K ALL PASS s3cr3tvalue\n"))
	assert.NilError(t, err)
	assert.NilError(t, w.Control("\x1b[1A\x1b[2K\r"))
	_, err = w.Write([]byte("partial \u202e"))
	assert.NilError(t, err)
	assert.NilError(t, w.Close())
	// The line holding a secret is written without its escape sequences
	// (segmentSplit), its CR escaped.
	assert.Equal(t, b.String(), `run\r ALL PASS `+Mask+"\n\x1b[1A\x1b[2K\rpartial \\u202e")
}

// A known secret value is masked in the other forms a log writes it:
// URL-encoded (a query, a path), quoted by Go's %q, by bash's printf %q
// and by Python's repr(), and with NUL bytes or escape sequences put
// between its characters (a terminal shows it whole; the escaped reports
// show it around \x00).
func TestKnownValueOtherForms(t *testing.T) {
	const v = `pl@nted pw/1'2"3`
	r := New(v)
	for _, c := range []struct{ what, in string }{
		{"query", "GET /login?user=ops&pw=pl%40nted+pw%2F1%272%223 HTTP/1.1"},
		{"path", "https://h/pl@nted%20pw%2F1%272%223/x"},
		{"go %q", `config: password="pl@nted pw/1'2\"3"`},
		{"printf %q", `+ export DB=pl@nted\ pw/1\'2\"3`},
		{"python repr", `{'password': 'pl@nted pw/1\'2"3'}`},
		{"NUL between", "pw: pl@nt\x00ed pw/1'2\"3 done"},
		{"ESC between", "pw: pl@n\x1b[0mted pw/1'\x1b[1m2\"3 done"},
	} {
		out := r.String(c.in)
		for _, piece := range []string{"pl@n", "nted", "pl%40nted", `pw/1\'`, "ted pw"} {
			assert.Assert(t, !bytes.Contains([]byte(out), []byte(piece)), "%s: %q survives in %q", c.what, piece, out)
		}
		assert.Assert(t, bytes.Contains([]byte(out), []byte(Mask)), "%s: %q", c.what, out)
	}
	// A word that is no known value keeps its NULs and escapes.
	assert.Equal(t, r.String("a\x00b \x1b[1mbold\x1b[0m"), "a\x00b \x1b[1mbold\x1b[0m")
}

// A name or a secret split by NULs or escape sequences (what a terminal
// shows as HF_TOKEN=hf_...) is masked as the line reads on a terminal;
// a line whose split text holds no secret keeps its bytes.
func TestSplitSecretsMasked(t *testing.T) {
	for _, in := range []string{
		"HF_TO\x00KEN=plantedSplitValue61 next",
		"export GH_\x1b[1mTOKEN\x1b[0m=plantedSplitValue61",
		"DB_PASSWORD=planted\x00SplitValue61",
		"curl -u ops:plantedSplit\x1b[31mValue61 https://h",
	} {
		out := String(in)
		assert.Assert(t, !strings.Contains(out, "Value61"), "%q gave %q", in, out)
		assert.Assert(t, strings.Contains(out, Mask), "%q gave %q", in, out)
	}
	for _, in := range []string{"\x1b[32mPASS\x1b[0m busbw 344.0", "nccl\x00 all_reduce 8 GB/s"} {
		assert.Equal(t, String(in), in)
	}
}
