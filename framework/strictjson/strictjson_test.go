package strictjson

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"gotest.tools/v3/assert"
)

func TestDuplicateKey(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"none", `{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`, ""},
		{"top level", `{"status":"pass","status":"fail"}`, `duplicate key "status" in the top-level object: readers disagree on which value counts`},
		{"nested", `{"tests":[{"name":"x"},{"name":"y","status":"pass","metrics":[],"status":"fail"}]}`, `duplicate key "status" in tests[1]`},
		{"in a nested object", `{"run":{"sku":"h200","info":{"a":"1","a":"2"}}}`, `duplicate key "a" in run.info`},
		{"same key in sibling objects", `[{"a":1},{"a":1}]`, ""},
		{"after an array value", `{"a":[1,2,{"b":1}],"c":1,"a":3}`, `duplicate key "a" in the top-level object`},
		{"scalar", `1`, ""},
		{"second document not read", `{"a":1} {"a":1,"a":2}`, ""},
		{"malformed", `{"a":`, "unexpected EOF"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := DuplicateKey([]byte(c.doc))
			if c.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.want)
			assert.Equal(t, errors.Is(err, ErrDuplicateKey), c.name != "malformed")
		})
	}
}

// A real results.json (the failing H200 run of the recordings) has no
// key twice.
func TestDuplicateKeyRealResults(t *testing.T) {
	data, err := os.ReadFile("../../testdata/recordings/h200x2-2026-11-30-s2/p2poff/results.json")
	assert.NilError(t, err)
	assert.NilError(t, DuplicateKey(data))
}

// Whatever the bytes, DuplicateKey does not panic, and a document it
// passes decodes as encoding/json reads it, or not at all.
func FuzzDuplicateKey(f *testing.F) {
	if data, err := os.ReadFile("../../testdata/recordings/h200x2-2026-11-30-s2/p2poff/results.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"a":[{"b":1,"b":2}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if DuplicateKey(data) != nil {
			return
		}
		var v any
		_ = json.Unmarshal(data, &v)
	})
}
