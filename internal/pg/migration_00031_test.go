package pg_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestMigration00031 folds the identity registry into the customers'
// states: on the data of version 00030, every registry row ends held by
// its customer's state (copied where the state lacked it), a key the
// registry gives nobody or another customer is freed in the state, the
// key columns are unique, and the registry is gone. A registry row whose
// customer's state holds another key of the kind stops the migration, and
// nothing is lost.
func TestMigration00031(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if err := pg.MigrateTo(ctx, pool, 30); err != nil {
		t.Fatal(err)
	}
	key := func(b byte) []byte { return bytes.Repeat([]byte{b}, 16) }
	for _, sql := range []string{
		// a: consistent; b: the registry has its email, its state not; c:
		// its state holds a phone the registry gives a; d: its state holds
		// an email the registry gives nobody.
		`INSERT INTO customer_states (company_id, customer_id, version, external_id_hash, email_hash, phone_hash, token_hash, created_at, updated_at) VALUES
			('co', 'a', 1, '\x` + strings.Repeat("01", 16) + `', NULL, '\x` + strings.Repeat("03", 16) + `', '\x` + strings.Repeat("04", 16) + `', now(), now()),
			('co', 'b', 1, '\x` + strings.Repeat("11", 16) + `', NULL, NULL, NULL, now(), now()),
			('co', 'c', 1, NULL, NULL, '\x` + strings.Repeat("03", 16) + `', NULL, now(), now()),
			('co', 'd', 1, NULL, '\x` + strings.Repeat("22", 16) + `', NULL, NULL, now(), now())`,
		`INSERT INTO customer_identities (company_id, key_hash16, kind, customer_id) VALUES
			('co', '\x` + strings.Repeat("01", 16) + `', 'external_id', 'a'),
			('co', '\x` + strings.Repeat("03", 16) + `', 'phone', 'a'),
			('co', '\x` + strings.Repeat("04", 16) + `', 'customer_token', 'a'),
			('co', '\x` + strings.Repeat("11", 16) + `', 'external_id', 'b'),
			('co', '\x` + strings.Repeat("12", 16) + `', 'email', 'b')`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if err := pg.MigrateTo(ctx, pool, 31); err != nil {
		t.Fatal(err)
	}
	got := map[string][4][]byte{}
	rows, err := pool.Query(ctx, `SELECT customer_id, external_id_hash, email_hash, phone_hash, token_hash FROM customer_states`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var k [4][]byte
		if err := rows.Scan(&id, &k[0], &k[1], &k[2], &k[3]); err != nil {
			t.Fatal(err)
		}
		got[id] = k
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string][4][]byte{
		"a": {key(0x01), nil, key(0x03), key(0x04)},
		"b": {key(0x11), key(0x12), nil, nil},
		"c": {nil, nil, nil, nil},
		"d": {nil, nil, nil, nil},
	}
	for id, w := range want {
		for i := range w {
			if !bytes.Equal(got[id][i], w[i]) {
				t.Errorf("customer %s key %d: %x, want %x", id, i, got[id][i], w[i])
			}
		}
	}
	var registry bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('customer_identities') IS NOT NULL`).Scan(&registry); err != nil || registry {
		t.Errorf("customer_identities still there (%v)", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE customer_states SET email_hash = $1 WHERE customer_id = 'a'`, key(0x12)); err == nil {
		t.Error("two customers hold one email key")
	}

	// Down and up again: the registry comes back from the states, and the
	// states are what they were.
	if err := pg.MigrateTo(ctx, pool, 30); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM customer_identities`).Scan(&n); err != nil || n != 5 {
		t.Errorf("registry after down: %d rows (%v), want 5", n, err)
	}
	// b's state holds another email than its registry row: the migration
	// stops, and keeps the registry.
	if _, err := pool.Exec(ctx, `INSERT INTO customer_identities (company_id, key_hash16, kind, customer_id) VALUES ('co', $1, 'email', 'b')`, key(0x13)); err != nil {
		t.Fatal(err)
	}
	err = pg.MigrateTo(ctx, pool, 31)
	if err == nil || !strings.Contains(err.Error(), "1 identity registry rows are not held by their customer's state") {
		t.Fatalf("migrating over a registry row its state contradicts: %v", err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM customer_identities`).Scan(&n); err != nil || n != 6 {
		t.Errorf("registry after the refused migration: %d rows (%v), want 6", n, err)
	}
}
