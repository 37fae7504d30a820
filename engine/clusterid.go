// The dispatcher's cluster id: configured, or made up once and kept in the
// store, which every dispatcher on it shares (docs/design.md §6, Ownership).

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
	"dispatch-tui/engine/store"
)

// ClusterIDFile is the file in the state dir where versions before the
// store kept it held the derived cluster_id: read once, by the first start
// that finds the store without one, which then keeps it in the store.
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
	// AdoptLegacy: this start gave a cluster id to a store that already
	// held a queue (an upgrade): instances tagged LegacyOwner are this
	// install's and are adopted and retagged.
	AdoptLegacy bool
	// Note, if set, is worth a log line (the configured id differs from
	// the kept one).
	Note string
}

// ResolveClusterID returns the dispatcher's identity for cfg, kept in st:
// the id st keeps; else the one an older version kept in
// <state_dir>/cluster_id; else the configured one; else a new one ("dt-"
// and 8 hex digits). Whichever is found or made is kept in st. A
// configured id that differs from the kept one is used (with a Note) but
// not kept. existed tells that st held a queue before this start (the
// embedded file was there): without any id kept, that is an upgrade from
// before cluster ids.
func ResolveClusterID(cfg *config.Config, st store.Store, existed bool) (ClusterIdentity, error) {
	configured := cfg.Dispatcher.ClusterID
	kept, err := st.ClusterID()
	if err != nil {
		return ClusterIdentity{}, err
	}
	if kept != "" {
		if err := config.CheckClusterID(kept); err != nil {
			return ClusterIdentity{}, fmt.Errorf("the cluster id the store keeps: %w", err)
		}
		return chosen(configured, kept), nil
	}
	legacy, err := legacyClusterID(cfg.Dispatcher.StateDir)
	if err != nil {
		return ClusterIdentity{}, err
	}
	id := legacy
	if id == "" {
		id = configured
	}
	if id == "" {
		var rnd [4]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return ClusterIdentity{}, fmt.Errorf("make up a cluster id: %w", err)
		}
		id = "dt-" + hex.EncodeToString(rnd[:])
	}
	got, err := st.KeepClusterID(id)
	if err != nil {
		return ClusterIdentity{}, err
	}
	if got != id || legacy != "" {
		// Another dispatcher kept one first, or an older version had one.
		return chosen(configured, got), nil
	}
	return ClusterIdentity{ID: id, AdoptLegacy: existed && id != LegacyOwner}, nil
}

// chosen is the identity when kept is the kept id: the configured one wins,
// with a note, when it differs.
func chosen(configured, kept string) ClusterIdentity {
	if configured != "" && configured != kept {
		return ClusterIdentity{ID: configured, Note: fmt.Sprintf("configured cluster_id %s differs from %s kept in the store: instances tagged %s are no longer managed", configured, kept, kept)}
	}
	return ClusterIdentity{ID: kept}
}

// legacyClusterID is the id in <stateDir>/cluster_id, "" without the file.
func legacyClusterID(stateDir string) (string, error) {
	path := filepath.Join(stateDir, ClusterIDFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read cluster id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if err := config.CheckClusterID(id); err != nil {
		return "", fmt.Errorf("cluster id in %s: %w", path, err)
	}
	return id, nil
}
