package imports

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
)

// saveCustomerBook writes back what the chunk changed: the states, which
// hold the keys (migration 00031). Rows that are new (most of them in an
// import of new customers) are written with COPY, which costs the server
// much less than an upsert; the rest in one batch. versions are the
// stream versions of the customers loaded.
//
// Each key column is unique, checked row by row: a key that moves from one
// stored customer to another, or to a new one, is first taken from the
// customers that held it when the chunk began, so that no row ever
// briefly holds a key another still holds.
func saveCustomerBook(ctx context.Context, tx pgx.Tx, companyID string, book *customer.Book, versions map[string]int64, now time.Time) error {
	var taken [][]byte
	for _, kc := range book.KeyChanges() {
		if kc.Before != "" {
			taken = append(taken, []byte(kc.Key))
		}
	}
	var newStates [][]any
	var old []customer.State
	for _, s := range book.Touched() {
		if _, ok := versions[s.ID]; ok {
			old = append(old, s)
			continue
		}
		newStates = append(newStates, []any{companyID, s.ID, s.Version, s.Deleted, s.Forgotten,
			keyBytes(s.Keys.ExternalID), keyBytes(s.Keys.Email), keyBytes(s.Keys.Phone), keyBytes(s.Keys.Token), now, now})
	}
	if len(taken) > 0 {
		// The holders are found by their keys' indexes, and the company
		// filtered outside a fence, as in loadCustomerBook.
		if _, err := tx.Exec(ctx, `WITH holders AS MATERIALIZED (SELECT company_id, customer_id FROM customer_states
				WHERE external_id_hash = ANY((SELECT $2::bytea[])::bytea[]) OR email_hash = ANY((SELECT $2::bytea[])::bytea[])
					OR phone_hash = ANY((SELECT $2::bytea[])::bytea[]) OR token_hash = ANY((SELECT $2::bytea[])::bytea[]))
			UPDATE customer_states s SET
				external_id_hash = CASE WHEN s.external_id_hash = ANY($2::bytea[]) THEN NULL ELSE s.external_id_hash END,
				email_hash = CASE WHEN s.email_hash = ANY($2::bytea[]) THEN NULL ELSE s.email_hash END,
				phone_hash = CASE WHEN s.phone_hash = ANY($2::bytea[]) THEN NULL ELSE s.phone_hash END,
				token_hash = CASE WHEN s.token_hash = ANY($2::bytea[]) THEN NULL ELSE s.token_hash END
			FROM holders h WHERE h.company_id = $1 AND s.company_id = h.company_id AND s.customer_id = h.customer_id`, companyID, taken); err != nil {
			return fmt.Errorf("imports: free moved customer identities: %w", err)
		}
	}
	if len(newStates) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"customer_states"},
			[]string{"company_id", "customer_id", "version", "deleted", "forgotten", "external_id_hash", "email_hash", "phone_hash", "token_hash", "created_at", "updated_at"},
			pgx.CopyFromRows(newStates)); err != nil {
			return fmt.Errorf("imports: save customer states: %w", err)
		}
	}
	if len(old) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, stateUpdateSQL, stateUpdateArgs(companyID, old, now)...); err != nil {
		return fmt.Errorf("imports: save customer states: %w", err)
	}
	return nil
}

// stateUpdateSQL writes back the states of stored customers
// (stateUpdateArgs).
//
// Chunks of a company are applied one at a time, but the token backfill
// (IssueCustomerTokensHandler) is not one of them: it may give a customer
// its token, and a version more, between a chunk's read of the state and
// its write. A customer the chunk appends to then fails the chunk's
// append (the stream moved), but one that only lost an identity to
// another customer gets no event, and its stale state is written back.
// So the write never lowers a version, and a token only ever goes away
// with forgetting: those are the only two things the backfill changes.
const stateUpdateSQL = `UPDATE customer_states s SET version = greatest(s.version, u.version), deleted = u.deleted, forgotten = u.forgotten,
		external_id_hash = u.ext, email_hash = u.email, phone_hash = u.phone,
		token_hash = CASE WHEN u.forgotten THEN NULL ELSE coalesce(u.token, s.token_hash) END, updated_at = $10
	FROM unnest($2::text[], $3::bigint[], $4::bool[], $5::bool[], $6::bytea[], $7::bytea[], $8::bytea[], $9::bytea[])
		AS u(customer_id, version, deleted, forgotten, ext, email, phone, token)
	WHERE s.company_id = $1 AND s.customer_id = u.customer_id`

// stateUpdateArgs are the arguments of stateUpdateSQL for states.
func stateUpdateArgs(companyID string, states []customer.State, now time.Time) []any {
	n := len(states)
	ids, versions := make([]string, n), make([]int64, n)
	deleted, forgotten := make([]bool, n), make([]bool, n)
	ext, email, phone, token := make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
	for i, s := range states {
		ids[i], versions[i], deleted[i], forgotten[i] = s.ID, s.Version, s.Deleted, s.Forgotten
		ext[i], email[i], phone[i], token[i] = keyBytes(s.Keys.ExternalID), keyBytes(s.Keys.Email), keyBytes(s.Keys.Phone), keyBytes(s.Keys.Token)
	}
	return []any{companyID, ids, versions, deleted, forgotten, ext, email, phone, token, now.UTC()}
}

// keyBytes returns a key as a column value, NULL for no key.
func keyBytes(k customer.Key) []byte {
	if k == "" {
		return nil
	}
	return []byte(k)
}
