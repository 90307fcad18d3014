package manifest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/internal/testenv"
)

// sshKeygen is the real ssh-keygen of openssh-client, which the
// signatures must satisfy: customers check them with it, not with
// gpuaccept.
func sshKeygen(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("ssh-keygen")
	if err != nil {
		testenv.Missing(t, "ssh-keygen not found (apt-get install -y openssh-client)")
	}
	return p
}

// newKey makes an ssh key pair with ssh-keygen: typ is ed25519, rsa or
// ecdsa; passphrase "" leaves it unencrypted. It returns the private
// key's path and the allowed_signers line of identity for it.
func newKey(t *testing.T, typ, passphrase, identity, options string) (string, string) {
	t.Helper()
	key := filepath.Join(t.TempDir(), "id_"+typ)
	args := []string{"-q", "-t", typ, "-N", passphrase, "-C", identity, "-f", key}
	if typ == "rsa" {
		args = append(args, "-b", "2048")
	}
	out, err := exec.Command(sshKeygen(t), args...).CombinedOutput()
	assert.NilError(t, err, string(out))
	pub, err := os.ReadFile(key + ".pub")
	assert.NilError(t, err)
	line := identity + " "
	if options != "" {
		line += options + " "
	}
	return key, line + strings.TrimSpace(string(pub))
}

func allowedSigners(t *testing.T, lines ...string) string {
	p := filepath.Join(t.TempDir(), "allowed_signers")
	assert.NilError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return p
}

// keygenVerify is what a customer runs without gpuaccept.
func keygenVerify(t *testing.T, dir, allowed, identity string) (bool, string) {
	t.Helper()
	m, err := os.Open(filepath.Join(dir, layout.Manifest))
	assert.NilError(t, err)
	defer m.Close()
	cmd := exec.Command(sshKeygen(t), "-Y", "verify", "-f", allowed, "-I", identity, "-n", Namespace, "-s", filepath.Join(dir, layout.SigFile))
	cmd.Stdin = m
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return err == nil, out.String()
}

func signedFolder(t *testing.T, key string, passphrase []byte) string {
	t.Helper()
	dir := folder(t)
	_, err := Write(dir, "test", "h200")
	assert.NilError(t, err)
	k, err := LoadKey(key, passphrase)
	assert.NilError(t, err)
	assert.NilError(t, k.Sign(dir))
	return dir
}

// gpuaccept signs, ssh-keygen -Y verify accepts, for each key type an
// operator has; a manifest changed after signing is refused by both.
func TestSignVerifiedBySSHKeygen(t *testing.T) {
	for _, typ := range []string{"ed25519", "rsa", "ecdsa"} {
		t.Run(typ, func(t *testing.T) {
			key, line := newKey(t, typ, "", "operator@site", `namespaces="gpuaccept"`)
			allowed := allowedSigners(t, "# operators of site", line)
			dir := signedFolder(t, key, nil)
			sig, err := os.ReadFile(filepath.Join(dir, layout.SigFile))
			assert.NilError(t, err)
			assert.Assert(t, strings.HasPrefix(string(sig), "-----BEGIN SSH SIGNATURE-----\n"), string(sig))

			ok, out := keygenVerify(t, dir, allowed, "operator@site")
			assert.Assert(t, ok, out)
			assert.Assert(t, strings.Contains(out, `Good "gpuaccept" signature for operator@site`), out)
			s, err := VerifySignature(dir, allowed, "operator@site")
			assert.NilError(t, err)
			assert.Equal(t, s.Identity, "operator@site")
			assert.Assert(t, strings.HasPrefix(s.Fingerprint, "SHA256:"), s.Fingerprint)

			// Another identity, or a manifest made again.
			ok, out = keygenVerify(t, dir, allowed, "intruder@site")
			assert.Assert(t, !ok, out)
			_, err = VerifySignature(dir, allowed, "intruder@site")
			assert.ErrorContains(t, err, "allowed signers "+allowed+" do not list the key")

			assert.NilError(t, os.Remove(filepath.Join(dir, layout.Manifest)))
			_, err = Write(dir, "test", "h200")
			assert.NilError(t, err)
			ok, out = keygenVerify(t, dir, allowed, "operator@site")
			assert.Assert(t, !ok, "ssh-keygen must refuse a regenerated manifest: %s", out)
			_, err = VerifySignature(dir, allowed, "operator@site")
			assert.ErrorContains(t, err, "does not match manifest.json")
		})
	}
}

// The other way round: a manifest signed with ssh-keygen -Y sign (an
// operator without gpuaccept at hand) is checked by gpuaccept.
func TestVerifySignedBySSHKeygen(t *testing.T) {
	key, line := newKey(t, "ed25519", "", "operator@site", "")
	dir := folder(t)
	_, err := Write(dir, "test", "h200")
	assert.NilError(t, err)
	out, err := exec.Command(sshKeygen(t), "-Y", "sign", "-f", key, "-n", Namespace, filepath.Join(dir, layout.Manifest)).CombinedOutput()
	assert.NilError(t, err, string(out))
	allowed := allowedSigners(t, line)
	_, err = VerifySignature(dir, allowed, "operator@site")
	assert.NilError(t, err)

	// Signed for another purpose: refused, by ssh-keygen too.
	assert.NilError(t, os.Remove(filepath.Join(dir, layout.SigFile)))
	out, err = exec.Command(sshKeygen(t), "-Y", "sign", "-f", key, "-n", "file", filepath.Join(dir, layout.Manifest)).CombinedOutput()
	assert.NilError(t, err, string(out))
	_, err = VerifySignature(dir, allowed, "operator@site")
	assert.ErrorContains(t, err, `namespace "file", not "gpuaccept"`)
	ok, kout := keygenVerify(t, dir, allowed, "operator@site")
	assert.Assert(t, !ok, kout)
}

// allowed_signers as ssh-keygen(1) reads it: principal patterns, negation,
// namespaces and validity; what gpuaccept refuses, ssh-keygen refuses.
func TestAllowedSigners(t *testing.T) {
	key, line := newKey(t, "ed25519", "", "operator@site", "")
	dir := signedFolder(t, key, nil)
	pub := strings.TrimPrefix(line, "operator@site ")
	cases := []struct {
		name, lines, identity, err string
	}{
		{"exact", "operator@site " + pub, "operator@site", ""},
		{"one of a list", `alice@site,operator@site ` + pub, "operator@site", ""},
		{"quoted list", `"alice@site,operator@site" ` + pub, "operator@site", ""},
		{"pattern", "*@site " + pub, "operator@site", ""},
		{"pattern with ?", "operato?@site " + pub, "operator@site", ""},
		{"negated", "*@site,!operator@site " + pub, "operator@site", "do not list the key"},
		{"namespace listed", `operator@site namespaces="file,gpu*" ` + pub, "operator@site", ""},
		{"other namespace", `operator@site namespaces="file" ` + pub, "operator@site", "do not list the key"},
		{"expired", `operator@site valid-before="20200101" ` + pub, "operator@site", "do not list the key"},
		{"not yet valid", `operator@site valid-after="29990101Z" ` + pub, "operator@site", "do not list the key"},
		{"valid now", `operator@site valid-after="20200101",valid-before="299901010000Z" ` + pub, "operator@site", ""},
		{"comments and blank lines", "# site keys\n\n   \noperator@site " + pub + " laptop", "operator@site", ""},
		{"other key", func() string { _, l := newKey(t, "ed25519", "", "operator@site", ""); return l }(), "operator@site", "do not list the key"},
		{"cert authority only", "*@site cert-authority " + pub, "operator@site", "certificate authorities"},
		{"bad line", "operator@site ssh-ed25519 !!!", "operator@site", "line 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allowed := allowedSigners(t, c.lines)
			_, err := VerifySignature(dir, allowed, c.identity)
			ok, out := keygenVerify(t, dir, allowed, c.identity)
			if c.err == "" {
				assert.NilError(t, err)
				assert.Assert(t, ok, "ssh-keygen disagrees: %s", out)
				return
			}
			assert.ErrorContains(t, err, c.err)
			assert.Assert(t, !ok, "ssh-keygen accepts what gpuaccept refuses: %s", out)
		})
	}
}

// An encrypted key needs its passphrase (GPUACCEPT_SIGN_PASSPHRASE in the
// CLI); without it, or with a wrong one, signing fails saying so and
// writes nothing.
func TestSignEncryptedKey(t *testing.T) {
	key, line := newKey(t, "ed25519", "correct horse", "operator@site", "")
	dir := folder(t)
	_, err := Write(dir, "test", "h200")
	assert.NilError(t, err)
	_, err = LoadKey(key, nil)
	assert.ErrorContains(t, err, "is encrypted: give its passphrase in "+PassphraseEnv)
	_, err = LoadKey(key, []byte("wrong"))
	assert.ErrorContains(t, err, "cannot decrypt it with the passphrase")
	k, err := LoadKey(key, []byte("correct horse"))
	assert.NilError(t, err)
	assert.NilError(t, k.Sign(dir))
	ok, out := keygenVerify(t, dir, allowedSigners(t, line), "operator@site")
	assert.Assert(t, ok, out)
	assert.Assert(t, strings.Contains(out, k.Fingerprint()), "%s names %s", out, k.Fingerprint())

	// A signature is never replaced.
	assert.ErrorContains(t, k.Sign(dir), "already signed")

	// Not a key at all.
	_, err = LoadKey(filepath.Join(dir, layout.Manifest), nil)
	assert.ErrorContains(t, err, "not an ssh private key")
}

func TestVerifySignatureMissing(t *testing.T) {
	dir := folder(t)
	_, err := Write(dir, "test", "h200")
	assert.NilError(t, err)
	_, err = VerifySignature(dir, allowedSigners(t, "x ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGXnI1hT4dW5qGmW6DTVK4/5mw0Mp/4lXIevGiIo3G0o"), "x")
	assert.ErrorContains(t, err, layout.SigFile)
}

// The armour of manifest.json.sig is read as ssh-keygen -Y verify reads
// it (sshsig_dearmor: the BEGIN line at the very start, exactly; the END
// line after a newline; base64 between, blanks skipped): a signature file
// one of them takes and the other refuses would make gpuaccept verify say
// more than a customer's ssh-keygen, or less.
func TestSignatureArmourAsSSHKeygen(t *testing.T) {
	key, line := newKey(t, "ed25519", "", "operator@site", "")
	allowed := allowedSigners(t, line)
	const begin, end = "-----BEGIN SSH SIGNATURE-----", "-----END SSH SIGNATURE-----"
	for _, c := range []struct {
		name string
		edit func(string) string
	}{
		{"as signed", func(s string) string { return s }},
		{"blanks after BEGIN", func(s string) string { return strings.Replace(s, begin+"\n", begin+"  \n", 1) }},
		{"tab after BEGIN", func(s string) string { return strings.Replace(s, begin+"\n", begin+"\t\n", 1) }},
		{"blanks after END", func(s string) string { return strings.Replace(s, end+"\n", end+"   \n", 1) }},
		{"blanks after the body's lines", func(s string) string {
			i, j := strings.Index(s, "\n")+1, strings.Index(s, end)
			return s[:i] + strings.ReplaceAll(s[i:j], "\n", "  \n") + s[j:]
		}},
		{"CRLF", func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }},
		{"text before BEGIN", func(s string) string { return "note\n" + s }},
		{"blank line before BEGIN", func(s string) string { return "\n" + s }},
		{"a header line", func(s string) string { return strings.Replace(s, begin+"\n", begin+"\nComment: x\n\n", 1) }},
		{"text after END", func(s string) string { return s + "trailing\n" }},
		{"blank before END", func(s string) string { return strings.Replace(s, "\n"+end, "\n "+end, 1) }},
		{"no newline at the end", func(s string) string { return strings.TrimSuffix(s, "\n") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := signedFolder(t, key, nil)
			p := filepath.Join(dir, layout.SigFile)
			sig, err := os.ReadFile(p)
			assert.NilError(t, err)
			assert.NilError(t, os.WriteFile(p, []byte(c.edit(string(sig))), 0o644))
			kok, kout := keygenVerify(t, dir, allowed, "operator@site")
			_, err = VerifySignature(dir, allowed, "operator@site")
			assert.Equal(t, err == nil, kok, "ssh-keygen: %s; gpuaccept: %v", kout, err)
		})
	}
}

// dearmor reads any bytes without panicking, and takes only what starts
// with the BEGIN line and holds the END line after a newline, as
// ssh-keygen does.
func FuzzDearmor(f *testing.F) {
	f.Add([]byte(sigBegin + "U1NIU0lH\n" + sigEnd[1:] + "\n"))
	f.Add([]byte(sigBegin + "  \n" + sigEnd[1:]))
	f.Add([]byte("note\n" + sigBegin + "U1NIU0lH" + sigEnd))
	f.Add([]byte(sigBegin + "Comment: x\n\nU1NIU0lH" + sigEnd))
	f.Fuzz(func(t *testing.T, data []byte) {
		blob, err := dearmor(data)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(data, []byte(sigBegin)) || !bytes.Contains(data[len(sigBegin):], []byte(sigEnd)) {
			t.Fatalf("took %q", data)
		}
		_ = blob
	})
}

// --sign-key's passphrase comes from PassphraseEnv; unset, an encrypted
// key is refused saying where to give it.
func TestLoadKeyEnv(t *testing.T) {
	key, _ := newKey(t, "ed25519", "correct horse", "operator@site", "")
	t.Setenv(PassphraseEnv, "")
	_, err := LoadKeyEnv(key)
	assert.ErrorContains(t, err, "is encrypted: give its passphrase in "+PassphraseEnv)
	t.Setenv(PassphraseEnv, "wrong")
	_, err = LoadKeyEnv(key)
	assert.ErrorContains(t, err, "cannot decrypt it with the passphrase")
	t.Setenv(PassphraseEnv, "correct horse")
	k, err := LoadKeyEnv(key)
	assert.NilError(t, err)
	assert.Assert(t, k != nil)
}
