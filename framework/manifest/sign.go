package manifest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// Namespace is the SSHSIG namespace of a gpuaccept sign-off: the -n of
// ssh-keygen -Y sign and -Y verify. A signature made for another purpose
// (git commits, "file") does not sign a results folder off.
const Namespace = "gpuaccept"

// PassphraseEnv is the environment variable the CLI reads the passphrase
// of an encrypted --sign-key from.
const PassphraseEnv = "GPUACCEPT_SIGN_PASSPHRASE"

// maxKey bounds a private key file read (an RSA 16384 key is ~13 KB).
const maxKey = 1 << 20

// Key is an operator's ssh private key, loaded to sign results folders.
type Key struct {
	path   string
	signer ssh.Signer
}

// LoadKeyEnv is LoadKey with the passphrase from the environment
// variable PassphraseEnv (unset or empty: none), as --sign-key reads it.
func LoadKeyEnv(path string) (*Key, error) {
	var pass []byte
	if p := os.Getenv(PassphraseEnv); p != "" {
		pass = []byte(p)
	}
	return LoadKey(path, pass)
}

// LoadKey reads the ssh private key in the file path (OpenSSH or PEM:
// ed25519, RSA, ECDSA); passphrase decrypts an encrypted one and may be
// nil when it is not. An encrypted key without passphrase, a wrong
// passphrase or a file that is no key are errors that say so (a run
// checks its key before it starts, not at sign-off).
func LoadKey(path string, passphrase []byte) (*Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read --sign-key: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read --sign-key %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKey))
	if err != nil {
		return nil, fmt.Errorf("read --sign-key %s: %w", path, err)
	}
	signer, err := ssh.ParsePrivateKey(data)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing) && len(passphrase) == 0:
		return nil, fmt.Errorf("--sign-key %s is encrypted: give its passphrase in %s", path, PassphraseEnv)
	case errors.As(err, &missing):
		signer, err = ssh.ParsePrivateKeyWithPassphrase(data, passphrase)
		if err != nil {
			return nil, fmt.Errorf("--sign-key %s: cannot decrypt it with the passphrase that %s holds (%w)", path, PassphraseEnv, err)
		}
	case err != nil:
		return nil, fmt.Errorf("--sign-key %s: not an ssh private key: %w", path, err)
	}
	return &Key{path: path, signer: signer}, nil
}

// Type is the key's ssh type ("ssh-ed25519", "ssh-rsa", ...).
func (k *Key) Type() string { return k.signer.PublicKey().Type() }

// Fingerprint is the key's "SHA256:..." fingerprint, as ssh-keygen -l
// shows it.
func (k *Key) Fingerprint() string { return ssh.FingerprintSHA256(k.signer.PublicKey()) }

// Sign signs dir/manifest.json with k and writes the signature as
// dir/manifest.json.sig: an armored SSHSIG, namespace Namespace, SHA-512,
// what ssh-keygen -Y sign -n gpuaccept writes, so that
//
//	ssh-keygen -Y verify -f allowed_signers -I ID -n gpuaccept -s manifest.json.sig < manifest.json
//
// checks it without gpuaccept. It never replaces a signature.
func (k *Key) Sign(dir string) error {
	sigPath := filepath.Join(dir, layout.SigFile)
	if _, err := os.Lstat(sigPath); err == nil {
		return fmt.Errorf("sign %s: already signed (%s exists); a signature is never replaced", dir, sigPath)
	}
	data, err := safefs.ReadFile(dir, layout.Manifest, maxManifest)
	if err != nil {
		return fmt.Errorf("sign manifest: %w", err)
	}
	sig, err := sshsig.Sign(bytes.NewReader(data), k.signer, sshsig.HashSHA512, Namespace)
	if err != nil {
		return fmt.Errorf("sign %s with %s: %w", filepath.Join(dir, layout.Manifest), k.path, err)
	}
	if err := writeNew(sigPath, sshsig.Armor(sig)); err != nil {
		return fmt.Errorf("write signature: %w", err)
	}
	return nil
}

// Signer is who signed a manifest, as the allowed signers file has it.
type Signer struct {
	// Identity is the principal checked (-I of ssh-keygen -Y verify).
	Identity string
	// KeyType is the ssh key type ("ssh-ed25519", "ssh-rsa", ...).
	KeyType string
	// Fingerprint is the key's "SHA256:..." fingerprint.
	Fingerprint string
	// Line is the allowed signers line that lists the key.
	Line int
}

// ReadSignature reads dir/manifest.json.sig without checking it, for
// showing who signed: the key type and fingerprint.
func ReadSignature(dir string) (keyType, fingerprint string, err error) {
	sig, err := readSignature(dir)
	if err != nil {
		return "", "", err
	}
	return sig.PublicKey.Type(), ssh.FingerprintSHA256(sig.PublicKey), nil
}

func readSignature(dir string) (*sshsig.Signature, error) {
	p := filepath.Join(dir, layout.SigFile)
	data, err := safefs.ReadFile(dir, layout.SigFile, maxKey)
	if err != nil {
		return nil, fmt.Errorf("read signature: %w", err)
	}
	blob, err := dearmor(data)
	if err != nil {
		return nil, fmt.Errorf("read signature %s: not an SSH signature: %w", p, err)
	}
	sig, err := sshsig.ParseSignature(blob)
	if err != nil {
		return nil, fmt.Errorf("read signature %s: not an SSH signature: %w", p, err)
	}
	return sig, nil
}

// The armour of an SSH signature (PROTOCOL.sshsig, "Armored format").
const (
	sigBegin = "-----BEGIN SSH SIGNATURE-----\n"
	sigEnd   = "\n-----END SSH SIGNATURE-----"
)

// dearmor returns the signature blob of an armoured SSH signature, read
// as ssh-keygen -Y verify reads it (openssh sshsig.c, sshsig_dearmor): the
// BEGIN line exactly at the start (no text or blank before it, no blank
// after it, no CR), the END line after a newline (what follows it is not
// read), and between them base64 whose blanks and line breaks are
// skipped. encoding/pem (sshsig.Unarmor) takes more: text before BEGIN,
// blanks after it, header lines, CRLF; a signature file gpuaccept verify
// accepted and ssh-keygen refused would make verify say more than the
// customer's own check.
func dearmor(data []byte) ([]byte, error) {
	if !bytes.HasPrefix(data, []byte(sigBegin)) {
		return nil, fmt.Errorf("does not start with the line %q as ssh-keygen requires", strings.TrimSpace(sigBegin))
	}
	body := data[len(sigBegin):]
	i := bytes.Index(body, []byte(sigEnd))
	if i < 0 {
		return nil, fmt.Errorf("no line %q", strings.TrimSpace(sigEnd))
	}
	b64 := bytes.Map(func(r rune) rune {
		if strings.ContainsRune(" \t\n\v\f\r", r) {
			return -1
		}
		return r
	}, body[:i])
	blob, err := base64.StdEncoding.Strict().DecodeString(string(b64))
	if err != nil {
		return nil, fmt.Errorf("base64: %w", err)
	}
	return blob, nil
}

// VerifySignature checks dir/manifest.json.sig the way ssh-keygen -Y
// verify -f allowedSigners -I identity -n gpuaccept does: the signature
// must be in namespace Namespace, made by a key the allowed signers file
// lists for identity (principal patterns, namespaces=, valid-after=,
// valid-before=; cert-authority lines are not checked), over the bytes of
// dir/manifest.json. Errors say which of these failed.
func VerifySignature(dir, allowedSigners, identity string) (*Signer, error) {
	sig, err := readSignature(dir)
	if err != nil {
		return nil, err
	}
	if sig.Namespace != Namespace {
		return nil, fmt.Errorf("%s is signed for namespace %q, not %q: it does not sign a results folder off", layout.SigFile, sig.Namespace, Namespace)
	}
	entries, err := readAllowedSigners(allowedSigners)
	if err != nil {
		return nil, err
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	var found *allowedSigner
	certOnly := false
	now := time.Now()
	for i := range entries {
		e := &entries[i]
		if !matchList(e.principals, identity) {
			continue
		}
		if e.certAuthority {
			certOnly = true
			continue
		}
		if bytes.Equal(e.key.Marshal(), sig.PublicKey.Marshal()) && e.namespaceOK(Namespace) && e.validAt(now) {
			found = e
			break
		}
	}
	if found == nil {
		if certOnly {
			return nil, fmt.Errorf("allowed signers %s name %s only through certificate authorities, which gpuaccept verify does not check (ssh-keygen -Y verify does)", allowedSigners, identity)
		}
		return nil, fmt.Errorf("allowed signers %s do not list the key %s %s that signed %s for %s in namespace %s, valid now",
			allowedSigners, sig.PublicKey.Type(), fp, layout.SigFile, identity, Namespace)
	}
	if sig.PublicKey.Type() == ssh.KeyAlgoRSA && sig.Signature.Format != ssh.KeyAlgoRSASHA512 && sig.Signature.Format != ssh.KeyAlgoRSASHA256 {
		// SHA-1 RSA signatures are refused by the SSHSIG protocol.
		return nil, fmt.Errorf("%s: RSA signature %s, want rsa-sha2-512 or rsa-sha2-256", layout.SigFile, sig.Signature.Format)
	}
	data, err := safefs.ReadFile(dir, layout.Manifest, maxManifest)
	if err != nil {
		return nil, fmt.Errorf("verify signature: %w", err)
	}
	if err := sshsig.Verify(bytes.NewReader(data), sig, found.key, sig.HashAlgorithm, Namespace); err != nil {
		return nil, fmt.Errorf("%s does not match manifest.json: the manifest is not the one signed by %s (%v)", layout.SigFile, fp, err)
	}
	return &Signer{Identity: identity, KeyType: sig.PublicKey.Type(), Fingerprint: fp, Line: found.line}, nil
}

// SignatureMatches checks dir/manifest.json.sig against the public key it
// carries, with no allowed signers: it cannot say who signed, but it does
// say whether manifest.json is still the file that key signed, in
// namespace Namespace. An error says which failed.
func SignatureMatches(dir string) error {
	sig, err := readSignature(dir)
	if err != nil {
		return err
	}
	if sig.Namespace != Namespace {
		return fmt.Errorf("%s is signed for namespace %q, not %q: it does not sign a results folder off", layout.SigFile, sig.Namespace, Namespace)
	}
	data, err := safefs.ReadFile(dir, layout.Manifest, maxManifest)
	if err != nil {
		return fmt.Errorf("verify signature: %w", err)
	}
	if err := sshsig.Verify(bytes.NewReader(data), sig, sig.PublicKey, sig.HashAlgorithm, Namespace); err != nil {
		return fmt.Errorf("%s does not match manifest.json: the manifest is not the one signed by %s (%v)", layout.SigFile, ssh.FingerprintSHA256(sig.PublicKey), err)
	}
	return nil
}
