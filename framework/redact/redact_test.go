package redact

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
		// Python's key argument (torchbench.py's sorted(..., key=lambda
		// r: ...), as a results folder keeps the command) is code.
		{`    return sorted(out, key=lambda r: r["node"])`, `    return sorted(out, key=lambda r: r["node"])`},
		{`key=lambdaPlanted9 pass=x`, `key=[REDACTED] pass=[REDACTED]`},
		{`Running benchmark with max_tokens_per_rank: 256`, `Running benchmark with max_tokens_per_rank: 256`},
		// Directories are no passwords; -p is a port or a flag outside the
		// MySQL clients; --mca and aws configure set take plain values too.
		{`OLDPWD=/root PWD=/tmp`, `OLDPWD=/root PWD=/tmp`},
		{`ib_write_bw -d mlx5_0 -p 18515 -F; ssh -p2222 node1; tar -pxf a.tar`, `ib_write_bw -d mlx5_0 -p 18515 -F; ssh -p2222 node1; tar -pxf a.tar`},
		{`mysql -h db1 -p results`, `mysql -h db1 -p results`},
		{`mysql -uroot -p'pa ss' results`, `mysql -uroot -p'[REDACTED]' results`},
		{`mpirun --mca btl_tcp_if_include eth0 --mca pml ucx`, `mpirun --mca btl_tcp_if_include eth0 --mca pml ucx`},
		{`aws configure set region us-east-1`, `aws configure set region us-east-1`},
		{`Enter password for ci: ; password incorrect for ci`, `Enter password for ci: ; password incorrect for ci`},
		// XML elements by their names, in any case, with a namespace or
		// attributes, escaped as JSON writes them; a plist's <key> is none.
		{`<Password>p1</Password><ns:token>t1</ns:token><secret kind="a">s1</secret>`, `<Password>[REDACTED]</Password><ns:token>[REDACTED]</ns:token><secret kind="a">[REDACTED]</secret>`},
		{`"<password>p1<\/password>"`, `"<password>[REDACTED]<\/password>"`},
		{`<key>Label</key><string>gpuaccept</string><password></password>`, `<key>Label</key><string>gpuaccept</string><password></password>`},
		// A value that ends in an earlier rule's Mask gains no second "]";
		// closers of what the value stands in stay, its own go.
		{`APP_SECRET=x-ghp_plantedGhClassicPat11111111111111111`, `APP_SECRET=[REDACTED]`},
		{`[APP_SECRET=x-ghp_plantedGhClassicPat11111111111111111]`, `[APP_SECRET=[REDACTED]]`},
		{`(DB_PASS=abc) {"token":5} X_TOKEN=a[1]`, `(DB_PASS=[REDACTED]) {"token":"[REDACTED]"} X_TOKEN=[REDACTED]`},
		// What a line leaves open reaches the next line only where it is
		// the secret's.
		{"Authorization: Bearer\n< HTTP/1.1 401 Unauthorized", "Authorization: Bearer\n< HTTP/1.1 401 Unauthorized"},
		{"  \"--hosts\",\n  \"node1\",\n  \"--auth-token\",\n  \"--next\",", "  \"--hosts\",\n  \"node1\",\n  \"--auth-token\",\n  \"--next\","},
		{"  password: |\n    p1\n  user: admin\nkey: |\n  k1", "  password: |\n    [REDACTED]\n  user: admin\nkey: |\n  k1"},
		{"export X_TOKEN='line1\nline2' && run\nnext", "export X_TOKEN='[REDACTED]\n[REDACTED]' && run\nnext"},
		// Round two: what the new formats must leave alone. Other tools'
		// -p and -P; openssl's env: and file:; a flag reading stdin; the
		// shell's PWD; gpuaccept's own {"name":"busbw","value":...} and
		// "status":"pass"; a reference in valueFrom; ports (no password)
		// before a "/"; CloudFront's Key-Pair-Id; a YAML alias; an
		// exception's message; a PuTTY key's public lines; a base64 JSON
		// or kubeconfig without a secret; words that hold "sk-".
		{`xargs -P 8 -n 1 ssh; rsync -P a b; grep -P '\d+' f; docker run -p 8080:80 nginx`, `xargs -P 8 -n 1 ssh; rsync -P a b; grep -P '\d+' f; docker run -p 8080:80 nginx`},
		{`openssl rsa -in k.pem -passin env:KEY_PASS -passout file:/run/pw -out p.pem`, `openssl rsa -in k.pem -passin env:KEY_PASS -passout file:/run/pw -out p.pem`},
		{`echo $T | docker login --password-stdin nvcr.io; ldapsearch -x -W; redis-cli -p 6379 --askpass ping`, `echo $T | docker login --password-stdin nvcr.io; ldapsearch -x -W; redis-cli -p 6379 --askpass ping`},
		{`smbclient -L fs1 -N; ipmitool -I lanplus -H h -U admin -E sdr; CREATE ROLE ci WITH LOGIN;`, `smbclient -L fs1 -N; ipmitool -I lanplus -H h -U admin -E sdr; CREATE ROLE ci WITH LOGIN;`},
		{`PWD=/home/x pwd: /scratch/run PWD=$HOME "PWD=\/root"`, `PWD=/home/x pwd: /scratch/run PWD=$HOME "PWD=\/root"`},
		{`{"name":"busbw","value":0},{"name":"HF_TOKEN_FILE","value":"/run/hf"},{"status":"pass","pass": 3,"key": "nvidia.com/gpu"}`, `{"name":"busbw","value":0},{"name":"HF_TOKEN_FILE","value":"/run/hf"},{"status":"pass","pass": 3,"key": "nvidia.com/gpu"}`},
		{"- name: HF_TOKEN\n  valueFrom:\n    secretKeyRef:\n      name: hf\n      key: token", "- name: HF_TOKEN\n  valueFrom:\n    secretKeyRef:\n      name: hf\n      key: token"},
		{`http://:8080/ docker://registry.example.com:5000/img@sha256:abc https://host:8443/a@b`, `http://:8080/ docker://registry.example.com:5000/img@sha256:abc https://host:8443/a@b`},
		{`https://d1.cloudfront.net/a?Expires=1&Key-Pair-Id=K2JCJMDEHXQW5F&X-Amz-SignedHeaders=host`, `https://d1.cloudfront.net/a?Expires=1&Key-Pair-Id=K2JCJMDEHXQW5F&X-Amz-SignedHeaders=host`},
		{"  password: *dbpw\nopenai.AuthenticationError: Incorrect API key provided", "  password: *dbpw\nopenai.AuthenticationError: Incorrect API key provided"},
		{"PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIPub\nComment: k", "PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1NTE5AAAAIPub\nComment: k"},
		{`eyJhbGciOiJIUzI1NiJ9eyJraW5kIjoiQ29uZmlnIn0 YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmlnCg==`, `eyJhbGciOiJIUzI1NiJ9eyJraW5kIjoiQ29uZmlnIn0 YXBpVmVyc2lvbjogdjEKa2luZDogQ29uZmlnCg==`},
		{`the disk-usage, task-id, ask-me; sk-short; diskname=sk-abc`, `the disk-usage, task-id, ask-me; sk-short; diskname=sk-abc`},
		// ... and what they mask besides the corpus: a URL after redis-cli
		// -u is the URL rules' (its user is no curl -u user); a MySQL hash
		// is no alias; Set-Cookie's first pair only.
		{`redis-cli -u redis://ci:pw12345@redis1:6379/0 ping`, `redis-cli -u redis://ci:[REDACTED]@redis1:6379/0 ping`},
		{`  password: *6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9`, `  password: [REDACTED]`},
		{`Set-Cookie: a=1; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT`, `Set-Cookie: a=[REDACTED]; Path=/; Expires=Wed, 21 Oct 2026 07:28:00 GMT`},
		// A certificate's base64 is public.
		{"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMwekNDQWJ1Z0F3SUJBZ0lKQU1wbGFu\ndGVkQ2VydEJvZHkwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAw", "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMwekNDQWJ1Z0F3SUJBZ0lKQU1wbGFu\ndGVkQ2VydEJvZHkwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAw"},
	}
	for _, c := range cases {
		assert.Equal(t, string(Line([]byte(c.in))), c.want)
		assert.Equal(t, string(Line([]byte(c.want))), c.want, "masking twice changes more")
	}
}

// Masked JSON stays valid JSON with its other members as they were: an
// unquoted value stops at the closing quote of the string it is in, and
// a JSON member's bare value becomes a string.
func TestMaskedJSONValid(t *testing.T) {
	for _, doc := range []string{
		`{"cmd":"x --token=abc","n":1}`,
		`{"cmd":"x --token abc","n":1}`,
		`{"msg":"DB_PASSWORD=a]b}c","n":1}`,
		`{"msg":"X_TOKEN=ab\"cd","n":1}`,
		`{"token":5,"n":1}`,
		`{"a":[{"auth":true}],"n":1}`,
		`{"args":["--auth-token","abc"],"n":1}`,
		`{"args":["--auth-token", "a b"],"n":1}`,
		`{"cmd":"mysql -uroot -pabc db","n":1}`,
		`{"cmd":"mpirun --mca oob_password abc x","n":1}`,
		`{"xml":"<password>abc</password>","n":1}`,
		`{"netrc":"machine h login u password abc","n":1}`,
		`{"y":"password: |\n  abc\n  abd\nuser: u\n","n":1}`,
		`{"h":"Authorization: Bearer \\\n  abcdefgh12345678","n":1}`,
		`{"k":"LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcGxhbnRlZFdyYXBwZWRLZXlCb2R5\nMDAwMDAwMDAw","n":1}`,
		`{"env":"X_TOKEN='abc'\\''abd'","n":1}`,
	} {
		// Also as part of a long line, masked element by element, and
		// escaped inside a JSON string (an outputs.json holding a -J
		// JSON).
		long := `{"pad":["` + strings.Repeat(`NCCL_X=1","`, longLine/10) + `"],` + doc[1:]
		escaped, _ := json.Marshal(long)
		for _, in := range []string{doc, long, `{"n":1,"json":` + string(escaped) + `}`} {
			out := String(in)
			assert.Assert(t, out != in, "nothing masked in %s", in)
			var got struct {
				N    int
				JSON string
			}
			assert.NilError(t, json.Unmarshal([]byte(out), &got), "%s -> %s", doc, out[max(0, len(out)-300):])
			assert.Equal(t, got.N, 1, out)
			if got.JSON != "" {
				assert.NilError(t, json.Unmarshal([]byte(got.JSON), &got), "%s -> %s", doc, got.JSON[max(0, len(got.JSON)-300):])
			}
			assert.Assert(t, !strings.Contains(out, "abc") && !strings.Contains(out, "abd") && !strings.Contains(out, "12345678") && !strings.Contains(out, "MDAw"), "%s -> %s", doc, out[max(0, len(out)-300):])
		}
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
		// One argument: its value whole, blanks and all.
		{"APP_SECRET=planted spaced secret17", []string{"planted spaced secret17", "planted"}},
		// The quote that follows the last Mask is also inside the secret.
		{`+ export 'DEPLOY_PASSWORD=ab'\''cd'`, []string{`ab'\''cd`}},
	}
	for _, c := range cases {
		assert.DeepEqual(t, Secrets(c.in), c.want)
	}
	r := FromEnv(nil, nil).With(Secrets("admin:hunter2pw@host1")...)
	assert.Equal(t, r.String(`slot count "hunter2pw@host1" is not a number`), `slot count "[REDACTED]@host1" is not a number`)
}

// A value holding single quotes, shell-quoted as the launchers print a
// command ('\” for each quote), is masked as the value itself is: raw,
// in a JSON string (results.json, the journal) and HTML-escaped
// (report.html). Each failed before unshell (TestNoSecretFromParamsAndErrors
// found them in a run's artifacts).
func TestShellQuotedQuotes(t *testing.T) {
	cases := []struct{ in, want string }{
		{`PLANT_PY_CONF='{'\''password'\'': '\''plantedPy28'\'', '\''user'\'': '\''ci'\''}' run`,
			`PLANT_PY_CONF='{'\''password'\'': '\''[REDACTED]'\'', '\''user'\'': '\''ci'\''}' run`},
		{`"PLANT_SQL='CREATE USER '\\''ci'\\'' IDENTIFIED BY '\\''plantedSql35'\\''' run"`,
			`"PLANT_SQL='CREATE USER '\\''ci'\\'' IDENTIFIED BY '\\''[REDACTED]'\\''' run"`},
		{`PLANT_WP=&#39;define(&#39;\&#39;&#39;DB_PASSWORD&#39;\&#39;&#39;,&#39;\&#39;&#39;plantedWp32&#39;\&#39;&#39;);&#39; run`,
			`PLANT_WP=&#39;define(&#39;\&#39;&#39;DB_PASSWORD&#39;\&#39;&#39;,&#39;\&#39;&#39;[REDACTED]&#39;\&#39;&#39;);&#39; run`},
	}
	for _, c := range cases {
		assert.Equal(t, String(c.in), c.want)
		assert.Equal(t, String(c.want), c.want, "masking twice changes more")
	}
}

// The quick test of SecretName lets through every name its regular
// expression matches: every word of the corpus and of the recordings.
func TestSecretWordsCoverSecretNames(t *testing.T) {
	words := map[string]bool{}
	for _, root := range []string{"testdata", "../../testdata/recordings"} {
		assert.NilError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			for _, w := range regexp.MustCompile(`[A-Za-z0-9_-]+`).FindAll(data, -1) {
				words[string(w)] = true
			}
			return err
		}))
	}
	matched := 0
	for w := range words {
		if secretName.MatchString(w) {
			matched++
			assert.Check(t, mayBeSecretName(w), w)
		}
	}
	assert.Assert(t, matched > 100, "only %d secret names among %d words", matched, len(words))
}

// A secret written inside a parameter's value (a training command that
// exports a password, then prints it bare) is known: the bare print is
// masked too. A value with no secret in it adds nothing.
func TestFromEnvLearnsSecretsInsideValues(t *testing.T) {
	for _, c := range []struct {
		params map[string]string
		line   string
		want   string
	}{
		{map[string]string{"command": "export MYSQL_PWD=S3CRETINLINE123; echo connecting"}, "connecting with S3CRETINLINE123\n", "connecting with [REDACTED]\n"},
		{map[string]string{"train.command": "HF_TOKEN=hf_abcdefghij0123456789 torchrun train.py"}, "token hf_abcdefghij0123456789 ok\n", "token [REDACTED] ok\n"},
		{map[string]string{"command": "torchrun --nproc-per-node 8 train.py --steps 30"}, "step 30 of 30\n", "step 30 of 30\n"},
	} {
		r := FromEnv(nil, c.params)
		assert.Equal(t, string(r.Bytes([]byte(c.line))), c.want)
	}
}
