// The dispatcher's own SSH key for the instances ec2 and script create.

package launch

// The dispatcher's SSH key for the instances of the drivers that create
// them (ec2, script): create hands its public half to each instance.

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/engine/config"
	"dispatch-tui/engine/secretfile"
)

// clientKey is the dispatcher's key for driver's instances: [cloud]
// ssh_key_file, or else one made on first use and kept in
// state_dir/<driver>/client_key.
func clientKey(cfg *config.Config, driver string) (ssh.Signer, error) {
	path := cfg.Cloud.SSHKeyFile
	if path == "" {
		path = filepath.Join(cfg.Dispatcher.StateDir, driver, "client_key")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if err := writeNewKey(path, driver); err != nil {
				return nil, fmt.Errorf("%s driver: create client key %s: %w", driver, path, err)
			}
		}
	}
	if err := secretfile.Stat(path); err != nil {
		return nil, fmt.Errorf("%s driver: client key (cloud.ssh_key_file): %w", driver, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s driver: read client key (cloud.ssh_key_file): %w", driver, err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s driver: client key %s: %w (it must be an unencrypted OpenSSH private key)", driver, path, err)
	}
	return s, nil
}

func writeNewKey(path, driver string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	block, err := ssh.MarshalPrivateKey(priv, "dispatch-tui "+driver)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
