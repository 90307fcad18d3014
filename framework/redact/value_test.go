package redact

import (
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

type inner struct {
	Msg    string
	Labels map[string]string
	When   time.Time
}

type outer struct {
	Name   string
	Value  float64
	Items  []inner
	Ptr    *inner
	Any    any
	Raw    []byte
	hidden string
}

// Value masks every string of a structure, at any depth, in a copy: the
// original is left as it was (other goroutines may read it), numbers and
// times stay.
func TestValue(t *testing.T) {
	when := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	in := outer{
		Name:  "run HF_TOKEN=hf_abc123",
		Value: 344.5,
		Items: []inner{{Msg: "line: Authorization: Bearer abcdefgh12345678", Labels: map[string]string{"size": "4G", "note": "DB_PASS=x1y2"}, When: when}},
		Ptr:   &inner{Msg: "curl -u admin:pw1234 https://bmc"},
		Any:   map[string]any{"k": "SECRET_KEY=v", "n": 3},
		Raw:   []byte("X_TOKEN=abcd"),
	}
	in.hidden = "Y_TOKEN=kept"
	got := Value((*Redactor)(nil), in)
	assert.Equal(t, got.Name, "run HF_TOKEN=[REDACTED]")
	assert.Equal(t, got.Value, 344.5)
	assert.Equal(t, got.Items[0].Msg, "line: Authorization: Bearer [REDACTED]")
	assert.DeepEqual(t, got.Items[0].Labels, map[string]string{"size": "4G", "note": "DB_PASS=[REDACTED]"})
	assert.Equal(t, got.Items[0].When, when)
	assert.Equal(t, got.Ptr.Msg, "curl -u admin:[REDACTED] https://bmc")
	assert.DeepEqual(t, got.Any, map[string]any{"k": "SECRET_KEY=[REDACTED]", "n": 3})
	assert.Equal(t, string(got.Raw), "X_TOKEN=[REDACTED]")
	// The original is untouched.
	assert.Equal(t, in.Items[0].Labels["note"], "DB_PASS=x1y2")
	assert.Equal(t, in.Ptr.Msg, "curl -u admin:pw1234 https://bmc")
	assert.Equal(t, string(in.Raw), "X_TOKEN=abcd")
	var nilPtr *outer
	assert.Assert(t, Value((*Redactor)(nil), nilPtr) == nil)
}
