package launch

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"dispatch-tui/cloud/ec2"
	"dispatch-tui/engine/config"
	"dispatch-tui/engine/secretfile"
)

// newEC2 builds the EC2 driver from [cloud] and [cloud.ec2]: the cloud
// drivers do not read the config.
func newEC2(cfg *config.Config, log *slog.Logger) (*ec2.Driver, error) {
	signer, err := ec2ClientKey(cfg)
	if err != nil {
		return nil, err
	}
	e := cfg.Cloud.EC2
	d, err := ec2.New(context.Background(), ec2.Options{
		Region: e.Region, Profile: e.Profile, Endpoint: e.Endpoint, ImageID: e.ImageID,
		SubnetIDs: e.SubnetIDs, SecurityGroupIDs: e.SecurityGroupIDs, KeyPairName: e.KeyPairName,
		Signer: signer, AdminUser: e.AdminUser, SSHPort: cfg.Cloud.SSHPort,
		RootVolumeSize: e.RootVolumeSize, RootVolumeType: e.RootVolumeType,
		ScratchVolumeType: e.ScratchVolumeType, IAMInstanceProfile: e.IAMInstanceProfile,
		Tags: e.Tags, UsePrivateIP: e.UsePrivateIP, MetadataHopLimit: int32(e.MetadataHopLimit),
		Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("start ec2 driver: %w", err)
	}
	return d, nil
}

// ec2ClientKey is the dispatcher's key for its EC2 instances: [cloud]
// ssh_key_file, or else one made on first use and kept in the state dir.
func ec2ClientKey(cfg *config.Config) (ssh.Signer, error) {
	path := cfg.Cloud.SSHKeyFile
	if path == "" {
		path = filepath.Join(cfg.Dispatcher.StateDir, "ec2", "client_key")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if err := writeNewKey(path); err != nil {
				return nil, fmt.Errorf("ec2 driver: create client key %s: %w", path, err)
			}
		}
	}
	if err := secretfile.Stat(path); err != nil {
		return nil, fmt.Errorf("ec2 driver: client key (cloud.ssh_key_file): %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ec2 driver: read client key (cloud.ssh_key_file): %w", err)
	}
	s, err := ssh.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("ec2 driver: client key %s: %w (it must be an unencrypted OpenSSH private key)", path, err)
	}
	return s, nil
}

func writeNewKey(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	block, err := ssh.MarshalPrivateKey(priv, "dispatch-tui ec2")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(block), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
