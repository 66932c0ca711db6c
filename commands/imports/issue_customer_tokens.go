package imports

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// IssueCustomerTokens gives a tracking token to every customer created
// before customers were created with one (migration 00023), so that every
// customer has one (docs/customers.md, "Tracking tokens"). serve runs it
// at start, in the background.
type IssueCustomerTokens struct {
	// Batch is the most customers one transaction gives tokens to;
	// 0 (or less) means DefaultTokenBatch.
	Batch int
}

// DefaultTokenBatch is IssueCustomerTokens' batch size: a transaction of
// a few tens of milliseconds, like an import chunk's, that holds back
// the log's readers no longer than one.
const DefaultTokenBatch = 500

// tokenLockTimeout bounds how long a batch waits for a lock. An import
// chunk that appended to a customer's stream and then writes its state
// waits for the batch, which holds that state and waits for the stream:
// the batch gives up first (PostgreSQL's deadlock check would abort one of
// the two after a second, maybe the chunk), and is tried again.
const tokenLockTimeout = "200ms"

// IssuedCustomerTokens is what IssueCustomerTokensHandler.Handle did.
type IssuedCustomerTokens struct {
	// Issued is the number of customers given a token.
	Issued int
	// Remaining: customers without a token are left that a concurrent
	// batch holds (another node's, or one that is ending); they are
	// issued a token by it, or, should it fail, by a later Handle.
	Remaining bool
}

// IssueCustomerTokensHandler handles IssueCustomerTokens.
type IssueCustomerTokensHandler struct {
	pool  *pgxpool.Pool
	store TxAppender
	keys  crypto.KeyStore
	now   func() time.Time
}

// NewIssueCustomerTokensHandler returns the handler. store appends the
// events (the PostgreSQL event store, with its hooks), keys seals them
// with each customer's data key and hashes the tokens, now stamps the
// write-side state.
func NewIssueCustomerTokensHandler(pool *pgxpool.Pool, store TxAppender, keys crypto.KeyStore, now func() time.Time) IssueCustomerTokensHandler {
	if pool == nil || store == nil || keys.Keyring == nil || now == nil {
		panic("imports: NewIssueCustomerTokensHandler: nil dependency")
	}
	return IssueCustomerTokensHandler{pool: pool, store: store, keys: keys, now: now}
}

// Handle gives tokens, batch after batch, until no customer without one
// is left that it can lock.
//
// Each batch is one transaction, of one company (a commit has one): it
// locks the states of customers that have no token and are neither
// deleted nor forgotten (customer.Book.IssueToken says why) with FOR
// UPDATE SKIP LOCKED, so that nodes running it at once share the work,
// appends to each a CustomerUpserted setting customer_token alone,
// sealed with the customer's data key, by actor and source "system", and
// registers the tokens' keys. Issuing a token is written in the
// transaction that records it, so a batch that fails leaves nothing
// behind, and the next Handle finds its customers again: it is safe to
// run any number of times, and after a crash.
func (h IssueCustomerTokensHandler) Handle(ctx context.Context, cmd IssueCustomerTokens) (IssuedCustomerTokens, error) {
	size := cmd.Batch
	if size <= 0 {
		size = DefaultTokenBatch
	}
	var out IssuedCustomerTokens
	for {
		n, err := h.batch(ctx, size)
		out.Issued += n
		if err != nil {
			return out, err
		}
		if n == 0 {
			break
		}
	}
	err := h.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM customer_states
		WHERE token_hash IS NULL AND NOT deleted AND NOT forgotten)`).Scan(&out.Remaining)
	if err != nil {
		return out, fmt.Errorf("imports: issue customer tokens: %w", err)
	}
	return out, nil
}

// batch gives tokens to at most size customers of one company, and
// returns how many; 0 when it found none to lock.
func (h IssueCustomerTokensHandler) batch(ctx context.Context, size int) (int, error) {
	issued := 0
	err := h.store.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+tokenLockTimeout+`'`); err != nil {
			return err
		}
		// The partial index customer_states_tokenless serves both
		// queries: the customers still to do, and nothing else.
		var companyID string
		err := tx.QueryRow(ctx, `SELECT company_id FROM customer_states
			WHERE token_hash IS NULL AND NOT deleted AND NOT forgotten
			LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&companyID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+customerStateColumns+` FROM customer_states
			WHERE company_id = $1 AND token_hash IS NULL AND NOT deleted AND NOT forgotten
			ORDER BY customer_id LIMIT $2 FOR UPDATE SKIP LOCKED`, companyID, size)
		if err != nil {
			return err
		}
		l := newCustomerLinks(h.keys, companyID)
		if err := loadCustomerStates(rows, l.book, l.versions); err != nil {
			return err
		}
		for _, id := range slices.Sorted(maps.Keys(l.versions)) {
			if o, ok := l.book.IssueToken(id); ok {
				l.streams.add(o, l.versions[id])
				issued++
			}
		}
		if issued == 0 {
			return nil
		}
		streams, _, err := l.seal(ctx, tx)
		if err != nil {
			return err
		}
		meta := eventstore.Metadata{CompanyID: companyID, Actor: "system", Source: "system", CorrelationID: commands.NewID()}
		if _, err := h.store.AppendTx(ctx, tx, eventstore.Commit{Metadata: meta, Streams: streams}); err != nil {
			return err
		}
		return l.save(ctx, tx, h.now())
	})
	if err != nil {
		return 0, fmt.Errorf("imports: issue customer tokens: %w", err)
	}
	return issued, nil
}
