package pluginapi

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestSplitParams(t *testing.T) {
	declared := []Param{{Name: "bindir"}, {Name: "maxbytes"}, {Name: "env.NAME"}}
	tests := []struct {
		name    string
		in      map[string]string
		env     map[string]string
		keys    []string
		wantErr string
	}{
		{name: "none", in: nil, env: map[string]string{}},
		{name: "sorted keys and env", in: map[string]string{"maxbytes": "4G", "bindir": "/b", "env.NCCL_DEBUG": "INFO"},
			env: map[string]string{"NCCL_DEBUG": "INFO"}, keys: []string{"bindir", "maxbytes"}},
		{name: "unknown", in: map[string]string{"bindr": "/b"}, wantErr: `unknown parameter "bindr" (known: bindir, maxbytes, env.NAME)`},
		{name: "empty env name", in: map[string]string{"env.": "x"}, wantErr: `parameter "env.": not a variable name`},
		{name: "env name with =", in: map[string]string{"env.A=B": "x"}, wantErr: `parameter "env.A=B": not a variable name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, keys, err := SplitParams(tc.in, declared)
			if tc.wantErr != "" {
				assert.Error(t, err, tc.wantErr)
				return
			}
			assert.NilError(t, err)
			assert.DeepEqual(t, env, tc.env)
			assert.DeepEqual(t, keys, tc.keys)
		})
	}
}
