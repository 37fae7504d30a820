// The dispatcher's cluster id: configured, or derived once and kept in the state dir.

package engine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"dispatch-tui/engine/config"
)

// ClusterIDFile is the file in the state dir that keeps the dispatcher's
// derived cluster_id across restarts.
const ClusterIDFile = "cluster_id"

// Log writes what an operator should know about the identity: a changed
// cluster_id, and a first start that adopts legacy-tagged instances.
func (ci ClusterIdentity) Log(log *slog.Logger) {
	if ci.Note != "" {
		log.Warn(ci.Note)
	}
	if ci.AdoptLegacy {
		log.Info("first start with a cluster id: adopting instances tagged with the old owner", "cluster_id", ci.ID, "legacy_owner", LegacyOwner)
	}
}

// StoreFile is the container store's file name in the state dir.
const StoreFile = "dispatch-tui.db"

// LegacyOwner is the owner tag every dispatcher used before cluster_id
// existed.
const LegacyOwner = "dispatch-tui"

// ClusterIdentity is who this dispatcher is in the owner tag.
type ClusterIdentity struct {
	ID string
	// AdoptLegacy: this start created the cluster_id file in a state dir
	// that already had a store (an upgrade): instances tagged LegacyOwner
	// are this install's and are adopted and retagged.
	AdoptLegacy bool
	// Note, if set, is worth a log line (the configured id differs from
	// the kept one).
	Note string
}

// ResolveClusterID returns the dispatcher's identity for cfg: see
// resolveClusterID. storePath "" is the store's default path.
func ResolveClusterID(cfg *config.Config, storePath string) (ClusterIdentity, error) {
	if storePath == "" {
		storePath = filepath.Join(cfg.Dispatcher.StateDir, StoreFile)
	}
	return resolveClusterID(cfg.Dispatcher.StateDir, cfg.Dispatcher.ClusterID, storePath)
}

// resolveClusterID returns the configured cluster_id, else the one kept in
// <stateDir>/cluster_id, else a new one ("dt-" and 8 hex digits) written
// there (0600). storePath is the store's file: whether it exists before
// the store is opened tells an upgrade from a fresh install.
func resolveClusterID(stateDir, configured, storePath string) (ClusterIdentity, error) {
	path := filepath.Join(stateDir, ClusterIDFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		kept := strings.TrimSpace(string(b))
		if err := config.CheckClusterID(kept); err != nil {
			return ClusterIdentity{}, fmt.Errorf("cluster id in %s: %w", path, err)
		}
		if configured != "" && configured != kept {
			return ClusterIdentity{ID: configured, Note: fmt.Sprintf("configured cluster_id %s differs from %s kept in %s: instances tagged %s are no longer managed", configured, kept, path, kept)}, nil
		}
		return ClusterIdentity{ID: kept}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return ClusterIdentity{}, fmt.Errorf("read cluster id: %w", err)
	}
	id := configured
	if id == "" {
		var rnd [4]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return ClusterIdentity{}, fmt.Errorf("make up a cluster id: %w", err)
		}
		id = "dt-" + hex.EncodeToString(rnd[:])
	}
	_, statErr := os.Stat(storePath)
	upgrade := statErr == nil
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return ClusterIdentity{}, fmt.Errorf("create state dir: %w", err)
	}
	if err := writeNewFile(path, []byte(id+"\n")); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process made one meanwhile: use it.
			return resolveClusterID(stateDir, configured, storePath)
		}
		return ClusterIdentity{}, fmt.Errorf("keep cluster id: %w", err)
	}
	return ClusterIdentity{ID: id, AdoptLegacy: upgrade && id != LegacyOwner}, nil
}

// writeNewFile creates path (which must not exist) with data, complete or
// not at all: a temporary file linked into place.
func writeNewFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".cluster_id-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}
