package crypto

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Reader reads: a pool, a connection or a transaction.
type Reader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Querier is a pool, a connection or a transaction.
type Querier interface {
	Reader
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// KeyStore keeps the subjects' data keys, wrapped, in the table
// customer_keys (company_id, customer_id, wrapped_key).
type KeyStore struct {
	Keyring *Keyring
	// Cache, when set, keeps what Load found (KeyCache), for a reader
	// that meets the same subjects again and again (a replay of a
	// company's log, the feed of its changes). Nil: every Load reads.
	Cache *KeyCache
}

// Load returns the clear data keys of the given subjects that still have
// one; a forgotten subject is absent from the map. One query for all
// (for those the Cache does not hold; none when it holds them all).
func (s KeyStore) Load(ctx context.Context, q Reader, companyID string, subjectIDs []string) (map[string][]byte, error) {
	keys := make(map[string][]byte, len(subjectIDs))
	if s.Cache != nil {
		missing := subjectIDs[:0:0]
		for _, id := range subjectIDs {
			if key, ok := s.Cache.get(companyID, id); !ok {
				missing = append(missing, id)
			} else if key != nil {
				keys[id] = key
			}
		}
		if len(missing) == 0 {
			return keys, nil
		}
		if err := s.load(ctx, q, companyID, missing, keys); err != nil {
			return nil, err
		}
		for _, id := range missing {
			s.Cache.put(companyID, id, keys[id]) // nil: gone
		}
		return keys, nil
	}
	return keys, s.load(ctx, q, companyID, subjectIDs, keys)
}

// load reads the keys of subjectIDs into keys.
func (s KeyStore) load(ctx context.Context, q Reader, companyID string, subjectIDs []string, keys map[string][]byte) error {
	if len(subjectIDs) == 0 {
		return nil
	}
	// The ids travel as an InitPlan parameter ((SELECT $2)), whose length
	// the planner cannot see: with the array as a plain parameter, stale
	// statistics (any large import, before autovacuum analyzes the table)
	// make it scan every key of the company and filter, a cost that grows
	// with the table. This way both columns are always the index condition.
	rows, err := q.Query(ctx, `SELECT customer_id, wrapped_key FROM customer_keys
		WHERE company_id = $1 AND customer_id = ANY((SELECT $2::text[])::text[])`, companyID, subjectIDs)
	if err != nil {
		return fmt.Errorf("crypto: load keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var wrapped []byte
		if err := rows.Scan(&id, &wrapped); err != nil {
			return fmt.Errorf("crypto: load keys: %w", err)
		}
		if keys[id], err = s.Keyring.Unwrap(wrapped); err != nil {
			return fmt.Errorf("crypto: key of %s: %w (wrong master key?)", id, err)
		}
	}
	return rows.Err()
}

// Create makes and stores a data key for each subject (which must have
// none yet) and returns the clear keys. One statement for all.
func (s KeyStore) Create(ctx context.Context, q Querier, companyID string, subjectIDs []string) (map[string][]byte, error) {
	keys, wrapped, err := s.Generate(subjectIDs)
	if err != nil {
		return nil, err
	}
	if err := s.Store(ctx, q, companyID, subjectIDs, wrapped); err != nil {
		return nil, err
	}
	return keys, nil
}

// Generate makes a data key for each subject, without storing it: the
// clear keys by subject, and the wrapped ones in the order of subjectIDs,
// for Store. A caller that seals with the keys before its transaction
// (the import pipeline, resolving a chunk ahead) stores them in it.
func (s KeyStore) Generate(subjectIDs []string) (keys map[string][]byte, wrapped [][]byte, err error) {
	keys = make(map[string][]byte, len(subjectIDs))
	wrapped = make([][]byte, len(subjectIDs))
	for i, id := range subjectIDs {
		plain, w, err := s.Keyring.NewDataKey()
		if err != nil {
			return nil, nil, err
		}
		keys[id], wrapped[i] = plain, w
	}
	return keys, wrapped, nil
}

// Store stores the wrapped keys Generate made for the subjects (which
// must have none yet). One statement for all.
func (s KeyStore) Store(ctx context.Context, q Querier, companyID string, subjectIDs []string, wrapped [][]byte) error {
	if len(subjectIDs) == 0 {
		return nil
	}
	if _, err := q.Exec(ctx, `INSERT INTO customer_keys (company_id, customer_id, wrapped_key)
		SELECT $1, * FROM unnest($2::text[], $3::bytea[])`, companyID, subjectIDs, wrapped); err != nil {
		return fmt.Errorf("crypto: store keys: %w", err)
	}
	s.Cache.drop(companyID, subjectIDs)
	return nil
}

// Destroy deletes the data keys of the subjects: crypto-shredding. Run it
// in the transaction that records the forgetting.
func (s KeyStore) Destroy(ctx context.Context, q Querier, companyID string, subjectIDs []string) error {
	if len(subjectIDs) == 0 {
		return nil
	}
	// ANY((SELECT ...)): an index condition on both columns, see Load.
	_, err := q.Exec(ctx, `DELETE FROM customer_keys WHERE company_id = $1 AND customer_id = ANY((SELECT $2::text[])::text[])`, companyID, subjectIDs)
	if err != nil {
		return fmt.Errorf("crypto: destroy keys: %w", err)
	}
	s.Cache.drop(companyID, subjectIDs)
	return nil
}
