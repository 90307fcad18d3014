package redact

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"gotest.tools/v3/assert"
)

// secretCase is one entry of testdata/secrets.yaml.
type secretCase struct {
	Name    string   `yaml:"name"`
	Doc     string   `yaml:"doc"`
	Line    string   `yaml:"line"`
	Want    string   `yaml:"want"`
	Secrets []string `yaml:"secrets"`
	Env     string   `yaml:"env"`
}

func corpus(t *testing.T) []secretCase {
	t.Helper()
	data, err := os.ReadFile("testdata/secrets.yaml")
	assert.NilError(t, err)
	var cs []secretCase
	assert.NilError(t, yaml.Unmarshal(data, &cs))
	assert.Assert(t, len(cs) >= 40, "only %d cases", len(cs))
	return cs
}

// ncclJSON is a string as nccl-tests' -J writer escapes it: JSON, with "/"
// written "\/" as well (see the "env" arrays under testdata/recordings).
func ncclJSON(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), "/", `\/`)
}

// shellEnv is NAME=value as a shell trace shows it: quoted when the value
// holds blanks.
func shellEnv(kv string) string {
	k, v, _ := strings.Cut(kv, "=")
	if strings.ContainsAny(v, " \t\n") {
		v = "'" + v + "'"
	}
	return k + "=" + v
}

func goJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Every format of the corpus is masked where a log shows it, and in the
// environment entry, raw and JSON-escaped (both as Go and as nccl-tests
// escape it): by its shape alone, without knowing the value.
func TestCorpus(t *testing.T) {
	names := map[string]bool{}
	for _, c := range corpus(t) {
		t.Run(c.Name, func(t *testing.T) {
			assert.Assert(t, !names[c.Name], "name used twice")
			names[c.Name] = true
			assert.Assert(t, strings.HasPrefix(c.Doc, "https://"), "no documentation named")
			assert.Assert(t, len(c.Secrets) > 0 && c.Env != "")
			got := String(c.Line)
			assert.Equal(t, got, c.Want)
			assert.Equal(t, String(got), got, "masking twice changes more")
			for _, s := range c.Secrets {
				assert.Assert(t, strings.Contains(c.Line+c.Env, s), "secret %q is not in the case", s)
				for _, form := range []struct{ what, in string }{
					{"line", c.Line}, {"env, as a shell writes it", shellEnv(c.Env)}, {"env, JSON", goJSON(c.Env)}, {"env, nccl-tests JSON", ncclJSON(c.Env)},
					{"env in a JSON array", `"env":["A=1",` + ncclJSON(c.Env) + `,"B=2"]`},
				} {
					out := String(form.in)
					for _, v := range []string{s, strings.Trim(goJSON(s), `"`), strings.Trim(ncclJSON(s), `"`)} {
						assert.Assert(t, !strings.Contains(out, v), "%s: %q survives in %q", form.what, v, out)
					}
				}
			}
		})
	}
}

// A -J JSON holding every secret of the corpus in its env array stays
// valid JSON once masked (the plugins parse the masked copy), and keeps
// every other entry as it was.
func TestMaskedJSONStaysValid(t *testing.T) {
	var env []string
	for _, c := range corpus(t) {
		env = append(env, ncclJSON(c.Env))
	}
	doc := `{"version":3,"env":["NCCL_DEBUG=INFO",` + strings.Join(env, ",") + `,"PATH=\/usr\/bin:\/bin","NCCL_IB_HCA=mlx5_0,mlx5_1"],"results":[{"size":8,"out_of_place":{"bus_bw":0.5}}]}`
	out := Bytes([]byte(doc))
	assert.Assert(t, json.Valid(out), "%s", out)
	var got struct {
		Env []string `json:"env"`
	}
	assert.NilError(t, json.Unmarshal(out, &got))
	assert.Equal(t, got.Env[0], "NCCL_DEBUG=INFO")
	assert.Equal(t, got.Env[len(got.Env)-2], "PATH=/usr/bin:/bin")
	assert.Equal(t, got.Env[len(got.Env)-1], "NCCL_IB_HCA=mlx5_0,mlx5_1")
	for _, c := range corpus(t) {
		for _, s := range c.Secrets {
			assert.Assert(t, !bytes.Contains(out, []byte(strings.Trim(ncclJSON(s), `"`))), "%s: %s", c.Name, s)
		}
	}
}

// Values known to be secret (the environment's) are masked in every form
// a report writes them: raw, JSON-escaped (Go and nccl-tests), HTML and
// XML-escaped.
func TestKnownValueForms(t *testing.T) {
	const v = `p/a"ss<&>word'42`
	r := FromEnv([]string{"DB_PASSWORD=" + v}, nil)
	for _, form := range []string{v, strings.Trim(goJSON(v), `"`), strings.Trim(ncclJSON(v), `"`),
		`p/a&#34;ss&lt;&amp;&gt;word&#39;42`, `p/a&quot;ss&lt;&amp;&gt;word&apos;42`} {
		out := r.String("printed " + form + " here")
		assert.Equal(t, out, "printed "+Mask+" here", form)
	}
}
