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
		{name: "empty env name", in: map[string]string{"env.": "x"}, wantErr: `parameter "env.": not a variable name: environment variable name "" is not a shell name (letters, digits and _, not starting with a digit)`},
		{name: "env name with =", in: map[string]string{"env.A=B": "x"}, wantErr: `parameter "env.A=B": not a variable name: environment variable name "A=B" is not a shell name (letters, digits and _, not starting with a digit)`},
		// The launchers write names into shell scripts and command lines:
		// one rule (plan.EnvName) for every plugin and launcher.
		{name: "env name a command", in: map[string]string{"env.$(id)": "1"}, wantErr: `parameter "env.$(id)": not a variable name: environment variable name "$(id)" is not a shell name (letters, digits and _, not starting with a digit)`},
		{name: "env name with a space", in: map[string]string{"env.A B": "1"}, wantErr: `parameter "env.A B": not a variable name: environment variable name "A B" is not a shell name (letters, digits and _, not starting with a digit)`},
		{name: "env name a digit first", in: map[string]string{"env.1X": "1"}, wantErr: `parameter "env.1X": not a variable name: environment variable name "1X" is not a shell name (letters, digits and _, not starting with a digit)`},
		{name: "env name a semicolon", in: map[string]string{"env.X;reboot": "1"}, wantErr: `parameter "env.X;reboot": not a variable name: environment variable name "X;reboot" is not a shell name (letters, digits and _, not starting with a digit)`},
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

func TestValueParams(t *testing.T) {
	tests := []struct {
		name, v string
		check   func(string, string) error
		wantErr string
	}{
		{name: "iters", v: "", check: CountParam},
		{name: "iters", v: "20", check: CountParam},
		{name: "iters", v: "-1", check: CountParam, wantErr: `parameter iters: "-1" is not a non-negative integer`},
		{name: "iters", v: "2x", check: CountParam, wantErr: `parameter iters: "2x" is not a non-negative integer`},
		{name: "json", v: "false", check: func(n, v string) error { _, err := BoolParam(n, v); return err }},
		{name: "json", v: "yes", check: func(n, v string) error { _, err := BoolParam(n, v); return err }, wantErr: `parameter json: "yes" is not true or false`},
		{name: "port", v: "18515", check: func(n, v string) error { _, err := PortParam(n, v); return err }},
		{name: "port", v: "0", check: func(n, v string) error { _, err := PortParam(n, v); return err }, wantErr: `parameter port: "0" is not a TCP port`},
		{name: "port", v: "65536", check: func(n, v string) error { _, err := PortParam(n, v); return err }, wantErr: `parameter port: "65536" is not a TCP port`},
	}
	for _, tc := range tests {
		err := tc.check(tc.name, tc.v)
		if tc.wantErr != "" {
			assert.Error(t, err, tc.wantErr, "%s=%q", tc.name, tc.v)
			continue
		}
		assert.NilError(t, err, "%s=%q", tc.name, tc.v)
	}
	b, err := BoolParam("json", "0")
	assert.NilError(t, err)
	assert.Equal(t, b, false)
	n, err := PortParam("port", "29500")
	assert.NilError(t, err)
	assert.Equal(t, n, 29500)
}
