package k8s

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/ssh"
)

// newSSHKeys makes the run's key pair for the Secret the MPI pods mount:
// "id" (OpenSSH private key), "id.pub" and "authorized_keys" (the public
// key). A fresh pair per run means a leaked Secret opens nothing after the
// run is cleaned up.
func newSSHKeys(comment string) (map[string][]byte, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("k8s: generate ssh key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, fmt.Errorf("k8s: encode ssh key: %w", err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("k8s: encode ssh public key: %w", err)
	}
	line := ssh.MarshalAuthorizedKey(sp)
	return map[string][]byte{"id": pem.EncodeToMemory(block), "id.pub": line, "authorized_keys": line}, nil
}
