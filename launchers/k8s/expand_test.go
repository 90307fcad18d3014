package k8s

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// kubeExpand is what the kubelet does to a container's command, args and
// env values (k8s.io/api core/v1 Container.Command, EnvVar.Value:
// "Variable references $(VAR_NAME) are expanded using the previously
// defined environment variables in the container ... Double $$ are
// reduced to a single $, which allows for escaping the $(VAR_NAME)
// syntax"; an unresolved reference stays as it is). vars are the
// variables it knows.
func kubeExpand(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := vars[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// containers lists every container (and init container) of objs' pod
// templates, as maps.
func containers(v any) []map[string]any {
	var out []map[string]any
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "containers" || k == "initContainers" {
				for _, c := range e.([]any) {
					out = append(out, c.(map[string]any))
				}
				continue
			}
			out = append(out, containers(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, containers(e)...)
		}
	}
	return out
}

// A parameter or env value holding $(NAME) or $$ reaches the pod as it
// was given: Kubernetes' own expansion of command and env values (which
// would put another variable's value there, or break out of the quoting
// of sh -c) finds nothing to expand, and what runs is what the dry run
// and the journal show.
func TestManifestEscapesKubernetesExpansion(t *testing.T) {
	for _, flavor := range []string{"", "mpijob", "jobset", "job"} {
		l, err := New(Config{Image: "img:1", Flavor: flavor})
		if err != nil {
			t.Fatalf("flavor %q: %v", flavor, err)
		}
		l.RunID = "ga-0000test"
		req := allGather(2, 4)
		tricky := []string{"a$(GPUACCEPT_RUN)b", "x$$y", "$$(GPUACCEPT_NODE_NAME)", "'$(NCCL_DEBUG)'", "end$", "$(", "$$$("}
		req.Plan.Steps[0].Env["NCCL_ALGO"] = strings.Join(tricky, " ")
		req.Plan.Steps[0].Argv = append(req.Plan.Steps[0].Argv, tricky...)
		r, err := l.render(req, "ga-0000test-1", "ns", nil)
		assert.NilError(t, err, "flavor %q", flavor)
		n, m := 0, 0
		for _, o := range r.objects() {
			for _, c := range containers(o.Object) {
				vars := map[string]string{}
				env, _ := c["env"].([]any)
				for _, e := range env {
					e := e.(map[string]any)
					name, _ := e["name"].(string)
					value, _ := e["value"].(string)
					got := kubeExpand(value, vars)
					if name == "NCCL_ALGO" {
						assert.Equal(t, got, strings.Join(tricky, " "), "flavor %q: env %s", flavor, name)
						n++
					}
					vars[name] = got
				}
				vars["NCCL_DEBUG"] = "INFO"
				cmd, _ := c["command"].([]any)
				args, _ := c["args"].([]any)
				for _, a := range append(cmd, args...) {
					got := kubeExpand(a.(string), vars)
					if strings.Contains(got, "all_gather_perf") {
						// What the journal records as the command.
						assert.Assert(t, strings.Contains(got, r.steps[0].command), "flavor %q: the pod runs\n%s\nnot\n%s", flavor, got, r.steps[0].command)
						m++
					}
				}
			}
		}
		assert.Assert(t, n > 0, "flavor %q: no container carries NCCL_ALGO", flavor)
		assert.Assert(t, m > 0, "flavor %q: no container runs all_gather_perf", flavor)
		for _, tr := range tricky {
			assert.Assert(t, strings.Contains(r.steps[0].command, tr), "flavor %q: %q not in the command recorded", flavor, tr)
		}
	}
}
