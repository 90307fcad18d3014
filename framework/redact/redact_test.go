package redact

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestLine(t *testing.T) {
	cases := []struct{ in, want string }{
		{`  "HF_TOKEN=hf_abcdefghijklmnop",`, `  "HF_TOKEN=[REDACTED]",`},
		{`export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG`, `export AWS_SECRET_ACCESS_KEY=[REDACTED]`},
		{`WANDB_API_KEY=0123456789abcdef NCCL_DEBUG=INFO`, `WANDB_API_KEY=[REDACTED] NCCL_DEBUG=INFO`},
		{`DB_PASSWORD: hunter2`, `DB_PASSWORD: [REDACTED]`},
		{`Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30`, `Authorization: Bearer [REDACTED]`},
		{`  "NCCL_NVLS_ENABLE=0",`, `  "NCCL_NVLS_ENABLE=0",`},
		{`# Avg bus bandwidth    : 103.407`, `# Avg bus bandwidth    : 103.407`},
		{`NCCL_IB_HCA=mlx5_0 NCCL_SOCKET_IFNAME=eth0`, `NCCL_IB_HCA=mlx5_0 NCCL_SOCKET_IFNAME=eth0`},
		{`DB_PASS=hunter2 SSH_KEY=abc GH_PAT=ghp_x KEY_ID=k1`, `DB_PASS=[REDACTED] SSH_KEY=[REDACTED] GH_PAT=[REDACTED] KEY_ID=[REDACTED]`},
		// SecretName matches any case; the quick hints must let these through.
		{`export gh_pat=ghp_abcdef0123`, `export gh_pat=[REDACTED]`},
		{`Gh_Pat: ghp_abcdef0123`, `Gh_Pat: [REDACTED]`},
		{`PAT_GITHUB=ghp_abcdef0123 PATH=/usr/bin`, `PAT_GITHUB=[REDACTED] PATH=/usr/bin`},
		// Kubernetes manifests: toleration keys, references to a Secret, and
		// a "secret:" block whose next line is not its value.
		{`      - key: nvidia.com/gpu`, `      - key: nvidia.com/gpu`},
		{`          secretName: ga-1234-ssh`, `          secretName: ga-1234-ssh`},
		{"        secret:\n          defaultMode: 256", "        secret:\n          defaultMode: 256"},
		{`      sshAuthMountPath: /root/.ssh`, `      sshAuthMountPath: /root/.ssh`},
		{`HF_TOKEN_FILE=/run/secrets/hf HF_TOKEN=hf_abc`, `HF_TOKEN_FILE=/run/secrets/hf HF_TOKEN=[REDACTED]`},
		// Usage text and verdicts: a bare KEY or PASS masks only a value.
		{`--param "novalue": want KEY=VALUE`, `--param "novalue": want KEY=VALUE`},
		{`nccl parameters (--param KEY=VALUE):`, `nccl parameters (--param KEY=VALUE):`},
		{`PASS: SKU h200, suite singlenode`, `PASS: SKU h200, suite singlenode`},
		{`KEY=k3yV4lue PASS=p4ss`, `KEY=[REDACTED] PASS=[REDACTED]`},
		{`Running benchmark with max_tokens_per_rank: 256`, `Running benchmark with max_tokens_per_rank: 256`},
	}
	for _, c := range cases {
		assert.Equal(t, string(Line([]byte(c.in))), c.want)
	}
}

// Secrets split across writes, and a last line without newline, are masked.
func TestWriterAcrossWrites(t *testing.T) {
	var out bytes.Buffer
	w := (*Redactor)(nil).NewWriter(&out)
	in := "line one\nGITHUB_TOKEN=ghp_0123456789abcdef\nlast SLACK_TOKEN=xoxb-12345"
	for i := 0; i < len(in); i += 7 {
		end := min(i+7, len(in))
		_, err := w.Write([]byte(in[i:end]))
		assert.NilError(t, err)
	}
	assert.NilError(t, w.Close())
	assert.Equal(t, out.String(), "line one\nGITHUB_TOKEN=[REDACTED]\nlast SLACK_TOKEN=[REDACTED]")
	assert.Assert(t, !strings.Contains(out.String(), "ghp_"))
}

// Redacting twice (a replayed results folder) changes nothing more.
func TestIdempotent(t *testing.T) {
	for _, in := range []string{`"HF_TOKEN=abcdef123",`, "Authorization: Bearer abcdefgh12345", "X_PASSWORD=p4ss word"} {
		once := Line([]byte(in))
		assert.Equal(t, string(Line(append([]byte{}, once...))), string(once))
	}
}

func TestMorePatterns(t *testing.T) {
	cases := []struct{ in, want string }{
		{`SOME_TOKEN='tok ZZZZ9999' all_reduce_perf -g 2`, `SOME_TOKEN='[REDACTED]' all_reduce_perf -g 2`},
		{`X_SECRET="a;b $c" cmd`, `X_SECRET="[REDACTED]" cmd`},
		{`DB_PASS=hunter2 GH_PAT=ghp_abc123def`, `DB_PASS=[REDACTED] GH_PAT=[REDACTED]`},
		{`DATABASE_URL=postgres://user:PW1234@db:5432/x`, `DATABASE_URL=postgres://user:[REDACTED]@db:5432/x`},
		{`all_reduce_perf --auth-token abcdef12 --password s3cr3t -g 2`, `all_reduce_perf --auth-token [REDACTED] --password [REDACTED] -g 2`},
		{`{"password": "hunter2", "user": "me"}`, `{"password": "[REDACTED]", "user": "me"}`},
		{`PATH=/usr/bin:/bin LD_LIBRARY_PATH=/x NCCL_IB_HCA=mlx5`, `PATH=/usr/bin:/bin LD_LIBRARY_PATH=/x NCCL_IB_HCA=mlx5`},
		{`--password --next`, `--password --next`},
	}
	for _, c := range cases {
		assert.Equal(t, String(c.in), c.want)
		assert.Equal(t, String(String(c.in)), c.want, "idempotent")
	}
}

// Values known to be secret are masked wherever they show, also when a
// benchmark prints them without their name.
func TestKnownValues(t *testing.T) {
	r := FromEnv([]string{"HF_TOKEN=hf_known_value", "HOME=/root", "X_KEY=ab"}, map[string]string{"env.MY_TOKEN": "tok ZZZZ9999", "maxbytes": "4G"})
	assert.Equal(t, r.String("printed hf_known_value and tok ZZZZ9999; home /root; ab"), "printed [REDACTED] and [REDACTED]; home /root; ab")
	assert.DeepEqual(t, r.Params(map[string]string{"env.MY_TOKEN": "tok ZZZZ9999", "maxbytes": "4G", "extra": "--token=abc12345"}),
		map[string]string{"env.MY_TOKEN": Mask, "maxbytes": "4G", "extra": "--token=[REDACTED]"})
	assert.Assert(t, SecretName("GH_PAT") && SecretName("db_pass") && !SecretName("PATH") && !SecretName("NCCL_IB_HCA") && !SecretName("PWD"))
}

// Secrets finds what of a command line's argument looks secret, so that
// an error quoting a piece of it is masked too.
func TestSecrets(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"admin:hunter2pw@host1,host2", []string{"hunter2pw"}},
		{"env.HF_TOKEN=hf_abc123 and DB_PASS=xyz1", []string{"hf_abc123", "xyz1"}},
		{"https://ci:pw12345@pypi.example.com/simple", []string{"pw12345"}},
		{"nccl.all_reduce", nil},
		{"X_TOKEN=ab", nil}, // too short to mask on its own
	}
	for _, c := range cases {
		assert.DeepEqual(t, Secrets(c.in), c.want)
	}
	r := FromEnv(nil, nil).With(Secrets("admin:hunter2pw@host1")...)
	assert.Equal(t, r.String(`slot count "hunter2pw@host1" is not a number`), `slot count "[REDACTED]@host1" is not a number`)
}
