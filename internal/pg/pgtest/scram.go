package pgtest

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg"
)

// scramIterations is the iteration count of the test servers' password.
// The client of every connection derives its key that many times
// (PBKDF2); PostgreSQL's default of 4,096 cost 1 to 5 ms of the test
// process's CPU per connection under -race, and the tests open tens of
// thousands. A test server holds throwaway data, listens on the loopback
// or a private socket, and its password is random: one iteration is
// enough there, and nowhere else.
const scramIterations = 1

// cheapenPassword sets the password of the server's user at url again,
// the same password, as a SCRAM secret of scramIterations iterations.
func cheapenPassword(ctx context.Context, url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	secret, err := scramSecret(cfg.Password, scramIterations)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER ROLE %s PASSWORD %s",
		pgx.Identifier{cfg.User}.Sanitize(), pg.QuoteLiteral(secret)))
	return err
}

// scramSecret is PostgreSQL's stored form of a SCRAM-SHA-256 password
// (RFC 5802, RFC 7677): SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>.
// The password must need no SASLprep (ASCII, as the test servers' are).
func scramSecret(password string, iterations int) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return "", err
	}
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	stored := sha256.Sum256(mac(salted, "Client Key"))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations, b64(salt), b64(stored[:]), b64(mac(salted, "Server Key"))), nil
}
