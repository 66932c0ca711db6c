package imports

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
)

// saveCustomerBook writes back what the chunk changed. Rows that are new
// (most of them in an import of new customers) are written with COPY,
// which costs the server much less than an upsert; the rest in one batch.
// versions are the stream versions of the customers loaded.
func saveCustomerBook(ctx context.Context, tx pgx.Tx, companyID string, book *customer.Book, versions map[string]int64, now time.Time) error {
	var newKeys [][]any
	var freed, moved [][]byte
	var movedTo []string
	for _, kc := range book.KeyChanges() {
		switch {
		case kc.CustomerID == "":
			freed = append(freed, []byte(kc.Key))
		case kc.Before == "":
			newKeys = append(newKeys, []any{companyID, []byte(kc.Key), string(kc.Kind), kc.CustomerID})
		default:
			moved, movedTo = append(moved, []byte(kc.Key)), append(movedTo, kc.CustomerID)
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
	if len(newKeys) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"customer_identities"},
			[]string{"company_id", "key_hash16", "kind", "customer_id"}, pgx.CopyFromRows(newKeys)); err != nil {
			return fmt.Errorf("imports: save customer identities: %w", err)
		}
	}
	if len(newStates) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"customer_states"},
			[]string{"company_id", "customer_id", "version", "deleted", "forgotten", "external_id_hash", "email_hash", "phone_hash", "token_hash", "created_at", "updated_at"},
			pgx.CopyFromRows(newStates)); err != nil {
			return fmt.Errorf("imports: save customer states: %w", err)
		}
	}
	var b pgx.Batch
	if len(freed) > 0 {
		// ANY((SELECT ...)): see loadCustomerBook.
		b.Queue(`DELETE FROM customer_identities WHERE company_id = $1 AND key_hash16 = ANY((SELECT $2::bytea[])::bytea[])`, companyID, freed)
	}
	if len(moved) > 0 {
		b.Queue(`UPDATE customer_identities i SET customer_id = u.customer_id
			FROM unnest($2::bytea[], $3::text[]) AS u(key_hash16, customer_id)
			WHERE i.company_id = $1 AND i.key_hash16 = u.key_hash16`, companyID, moved, movedTo)
	}
	if len(old) > 0 {
		queueStateUpdates(&b, companyID, old, now)
	}
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("imports: save customer state: %w", err)
	}
	return nil
}

// queueStateUpdates writes back the states of stored customers.
//
// Chunks of a company are applied one at a time, but the token backfill
// (IssueCustomerTokensHandler) is not one of them: it may give a customer
// its token, and a version more, between a chunk's read of the state and
// its write. A customer the chunk appends to then fails the chunk's
// append (the stream moved), but one that only lost an identity to
// another customer gets no event, and its stale state is written back.
// So the write never lowers a version, and a token only ever goes away
// with forgetting: those are the only two things the backfill changes.
func queueStateUpdates(b *pgx.Batch, companyID string, states []customer.State, now time.Time) {
	n := len(states)
	ids, versions := make([]string, n), make([]int64, n)
	deleted, forgotten := make([]bool, n), make([]bool, n)
	ext, email, phone, token := make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
	for i, s := range states {
		ids[i], versions[i], deleted[i], forgotten[i] = s.ID, s.Version, s.Deleted, s.Forgotten
		ext[i], email[i], phone[i], token[i] = keyBytes(s.Keys.ExternalID), keyBytes(s.Keys.Email), keyBytes(s.Keys.Phone), keyBytes(s.Keys.Token)
	}
	b.Queue(`UPDATE customer_states s SET version = greatest(s.version, u.version), deleted = u.deleted, forgotten = u.forgotten,
			external_id_hash = u.ext, email_hash = u.email, phone_hash = u.phone,
			token_hash = CASE WHEN u.forgotten THEN NULL ELSE coalesce(u.token, s.token_hash) END, updated_at = $10
		FROM unnest($2::text[], $3::bigint[], $4::bool[], $5::bool[], $6::bytea[], $7::bytea[], $8::bytea[], $9::bytea[])
			AS u(customer_id, version, deleted, forgotten, ext, email, phone, token)
		WHERE s.company_id = $1 AND s.customer_id = u.customer_id`,
		companyID, ids, versions, deleted, forgotten, ext, email, phone, token, now.UTC())
}

// keyBytes returns a key as a column value, NULL for no key.
func keyBytes(k customer.Key) []byte {
	if k == "" {
		return nil
	}
	return []byte(k)
}
