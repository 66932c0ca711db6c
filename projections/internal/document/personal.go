package document

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/crypto"
)

// Events and sales carry their customer's personal fields sealed with the
// customer's data key (activity.Recorded.Sealed, sale.Upserted.Sealed).
// Their projectors and datasync feeds open them here, with one rule: a
// personal value is shown only under one of the entity's Personal field
// names, so that removing those names removes the person. When the key
// is gone the customer is forgotten: nothing is opened, and the rows of
// the customer lose their personal fields.

// LoadCustomerKeys returns the data keys of the customers that still have
// one, one query per company (a live commit has one company).
func LoadCustomerKeys(ctx context.Context, q crypto.Reader, ks crypto.KeyStore, byCompany map[string][]string) (map[CustomerKey][]byte, error) {
	keys := map[CustomerKey][]byte{}
	for company, ids := range byCompany {
		got, err := ks.Load(ctx, q, company, ids)
		if err != nil {
			return nil, err
		}
		for id, k := range got {
			keys[CustomerKey{company, id}] = k
		}
	}
	return keys, nil
}

// OpenPersonal opens the personal fields that sealed holds for customer
// k, keeping those named in allowed. ok is false when the customer's key
// is gone (or is not the one that sealed them): the customer is
// forgotten, and nothing is opened.
func OpenPersonal(keys map[CustomerKey][]byte, k CustomerKey, sealed []byte, allowed []string) (fields map[string]any, ok bool, err error) {
	key, found := keys[k]
	if !found {
		return nil, false, nil
	}
	plain, err := crypto.Open(key, sealed, []byte(k.ID))
	if errors.Is(err, crypto.ErrDecrypt) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var all map[string]any
	if err := DecodeNumbers(plain, &all); err != nil {
		return nil, false, fmt.Errorf("personal fields: %w", err)
	}
	fields = make(map[string]any, len(all))
	for f, v := range all {
		if slices.Contains(allowed, f) {
			fields[f] = v
		}
	}
	return fields, true, nil
}

// DropFields removes the fields from doc.
func DropFields(doc map[string]any, fields []string) {
	for _, f := range fields {
		delete(doc, f)
	}
}

// QueueForget queues the statement that removes the personal fields from
// every row of table (columns company_id, customer_id, doc) of the gone
// customers. Rows without any are left alone (no new row version).
func QueueForget(b *pgx.Batch, table string, gone map[CustomerKey]bool, personal []string) {
	if len(gone) == 0 {
		return
	}
	companies, ids := make([]string, 0, len(gone)), make([]string, 0, len(gone))
	for k := range gone {
		companies, ids = append(companies, k.Company), append(ids, k.ID)
	}
	b.Queue(fmt.Sprintf(`UPDATE %s t SET doc = t.doc - $3::text[]
		FROM unnest($1::text[], $2::text[]) AS g(company_id, customer_id)
		WHERE t.company_id = g.company_id AND t.customer_id = g.customer_id AND t.doc ?| $3::text[]`,
		pgx.Identifier{table}.Sanitize()), companies, ids, personal)
}
