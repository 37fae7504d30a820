// Reading the container records at a start-up: the rows' raw bytes
// straight into the load's pipeline.

package pgstore

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/jackc/pgx/v5"

	"dispatch-tui/engine/store"
)

// loadRecords hands every container record in tx to recs. The rows are
// read as the server sends them (binary: a bigint's eight bytes, a bytea's
// own), not scanned: a scan would copy each body once more, and a start-up
// of a million records spent more on that than on receiving them.
func loadRecords(ctx context.Context, tx pgx.Tx, recs store.Records) error {
	rows, err := tx.Query(ctx, `SELECT seq, body FROM containers`,
		pgx.QueryResultFormats{pgx.BinaryFormatCode, pgx.BinaryFormatCode})
	if err != nil {
		return err
	}
	defer rows.Close()
	p := store.NewPipeline(recs, checkRecord)
	defer p.Close()
	for rows.Next() {
		v := rows.RawValues()
		if len(v) != 2 || len(v[0]) != 8 || v[1] == nil {
			return fmt.Errorf("load containers: a row is not a seq and a body (%d values)", len(v))
		}
		if err := p.Put(v[0], v[1]); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return p.Close()
}

// checkRecord holds a record to its row: key is the row's seq as the
// binary format sends it.
func checkRecord(key []byte, seq uint64, _ string, err error) error {
	row := int64(binary.BigEndian.Uint64(key))
	if err != nil {
		return fmt.Errorf("load container %d: %w", row, err)
	}
	if seq != uint64(row) {
		return fmt.Errorf("load container %d: the record says seq %d", row, seq)
	}
	return nil
}
