package imports

import (
	"context"
	"fmt"
	"strconv"

	"github.com/clientele/clientele/internal/crypto"
)

// A staged chunk's payload is compressed and sealed with a key of its run
// (crypto.SealCompressed; migration 00032): the raw records of an upload hold personal data, and a payload
// deleted when its chunk is applied still stands in the table's files
// (a dead row version) and the WAL until PostgreSQL reuses the space.
// The run's key, wrapped by the master key, is a row of import_run_keys
// deleted when the run is done (FinishChunk of its last chunk, FailRun,
// or with the run): from then on nothing staged for it opens, so a
// forgotten person's records are not readable in the staging's files.

// newRunKey creates the run's key: its row, and the key in clear to seal
// the run's chunks with.
func (s *Store) newRunKey(ctx context.Context, runID string) ([]byte, error) {
	plain, wrapped, err := s.keys.NewDataKey()
	if err != nil {
		return nil, fmt.Errorf("imports: key of run %s: %w", runID, err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO import_run_keys (run_id, wrapped) VALUES ($1, $2)`, runID, wrapped); err != nil {
		return nil, fmt.Errorf("imports: key of run %s: %w", runID, err)
	}
	return plain, nil
}

// chunkAAD binds a sealed payload to its chunk: a payload moved to
// another chunk does not open.
func chunkAAD(runID string, seq int) []byte {
	return []byte("import_chunks/" + runID + "/" + strconv.Itoa(seq))
}

// sealChunk seals a chunk's payload with its run's key.
func sealChunk(key []byte, runID string, seq int, payload []byte) ([]byte, error) {
	return crypto.SealCompressed(key, payload, chunkAAD(runID, seq))
}

// openChunk returns a stored payload in clear: opened with the run's
// wrapped key, or as stored when the run has no key (staged before
// chunks were sealed).
func (s *Store) openChunk(wrapped []byte, runID string, seq int, stored []byte) ([]byte, error) {
	if wrapped == nil || stored == nil {
		return stored, nil
	}
	key, err := s.keys.Unwrap(wrapped)
	if err == nil {
		stored, err = crypto.OpenCompressed(key, stored, chunkAAD(runID, seq))
	}
	if err != nil {
		return nil, fmt.Errorf("imports: open chunk %d of run %s: %w", seq, runID, err)
	}
	return stored, nil
}

// forgetRunKey is the statement, run in the transaction that ends the
// run, that deletes its key once the run is done.
const forgetRunKey = `DELETE FROM import_run_keys k USING import_runs r
	WHERE k.run_id = $1 AND r.id = k.run_id AND r.state IN ('completed', 'failed')`
