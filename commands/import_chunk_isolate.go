package commands

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/pg"
)

// A record the parsers accept but the store refuses (a number jsonb cannot
// hold, a value a constraint refuses, one that makes the Importer panic)
// fails its whole chunk, and the same way on every attempt; and since a
// company's chunks apply in upload order, every later upload of the
// company, forgets included, would wait behind it for ever. So once a
// chunk has failed isolateAfter-1 times for a reason retrying does not
// cure, its next attempt finds the records that fail it and rejects them,
// and applies the rest in the same one transaction as ever (exactly once:
// events, rejections, counts and the payload's deletion commit together).
//
// The search applies prefixes of the chunk under savepoints, each rolled
// back: a prefix is the records in upload order, so each probe sees every
// earlier record (the later record wins, identity resolution finds the
// earlier ones) exactly as the chunk's one application will. A transaction
// holds one event store commit (AppendTx refuses a second), and a probe
// rolled back leaves none; only the last probe, the whole chunk with the
// records found rejected, is kept, and it is the chunk's application.

// isolateAfter is the attempt of a chunk at which the worker looks for the
// records that fail it, counting the attempts that failed for a reason
// retrying does not cure. Not the first: an error misjudged as lasting
// gets two more tries as it is. Not much later: the company's imports
// wait meanwhile. A delivery tries 5 times within a second or so, so the
// search runs in the chunk's first delivery.
const isolateAfter = 3

// isolatedRecord is a record rejected because the store refused it.
type isolatedRecord struct {
	index  int    // in the upload
	reason string // the rejection's reason, without values
	code   string // the SQLSTATE, when PostgreSQL refused it
}

// prober applies prefixes of a chunk under savepoints of tx.
type prober struct {
	ctx   context.Context
	tx    pgx.Tx
	imp   Importer
	chunk Chunk
}

// try applies the chunk's first n records with the records of reject
// rejected, in a savepoint that it releases when keep is set and the
// Importer succeeded, and rolls back otherwise. failed is the Importer's
// error; err is an error of the savepoint itself, which leaves tx unusable.
func (p *prober) try(n int, reject map[int]string, keep bool) (accepted int, rejections []importing.Rejection, failed, err error) {
	sp, err := p.tx.Begin(p.ctx)
	if err != nil {
		return 0, nil, nil, err
	}
	c := p.chunk
	c.Records, c.Reject, c.Prepared = c.Records[:n], reject, nil
	accepted, rejections, failed = runImporter(p.ctx, sp, p.imp, c)
	if failed == nil && keep {
		return accepted, rejections, nil, sp.Commit(p.ctx)
	}
	return accepted, rejections, failed, sp.Rollback(p.ctx)
}

// isolate applies the chunk, rejecting the records the store refuses, and
// returns what the Importer made of it and the records it rejected so. It
// returns an error, and rejects nothing, when the failure is not a
// record's: when applying none of the records fails too, or when a probe
// fails for a reason recordsMayCause denies (an outage during the search
// must never reject good records: the chunk is retried later as ever).
func isolate(ctx context.Context, tx pgx.Tx, imp Importer, chunk Chunk) (int, []importing.Rejection, []isolatedRecord, error) {
	p := &prober{ctx: ctx, tx: tx, imp: imp, chunk: chunk}
	n := len(chunk.Records)
	none := make(map[int]string, n)
	for i := range n {
		none[i] = "not applied"
	}
	if _, _, failed, err := p.try(n, none, false); err != nil || failed != nil {
		return 0, nil, nil, errors.Join(failed, err)
	}
	// bad holds the records found, by position; every one is before lo,
	// and the first lo records without them apply.
	bad := map[int]string{}
	var found []isolatedRecord
	lo := 0
	for {
		accepted, rejections, failed, err := p.try(n, bad, true)
		if err != nil {
			return 0, nil, nil, errors.Join(failed, err)
		}
		if failed == nil {
			return accepted, rejections, found, nil
		}
		if lo >= n || !recordsMayCause(failed) {
			// Every record applies on its own terms, yet the chunk fails:
			// not a record's doing.
			return 0, nil, nil, failed
		}
		// The first failing prefix, by steps doubling from lo (records
		// that fail come in clusters as often as alone), then halving.
		hi, hiFailed := n, failed
		for step := 1; lo+step < n; step *= 2 {
			_, _, failed, err := p.try(lo+step, bad, false)
			if err != nil {
				return 0, nil, nil, errors.Join(failed, err)
			}
			if failed == nil {
				lo += step
				continue
			}
			if !recordsMayCause(failed) {
				return 0, nil, nil, failed
			}
			hi, hiFailed = lo+step, failed
			break
		}
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			_, _, failed, err := p.try(mid, bad, false)
			if err != nil {
				return 0, nil, nil, errors.Join(failed, err)
			}
			if failed == nil {
				lo = mid
				continue
			}
			if !recordsMayCause(failed) {
				return 0, nil, nil, failed
			}
			hi, hiFailed = mid, failed
		}
		// The first hi-1 records apply and the first hi do not: record
		// hi-1 fails the chunk.
		r := isolatedRecord{index: chunk.FirstIndex + hi - 1, reason: refusal(hiFailed)}
		var pgErr *pgconn.PgError
		if errors.As(hiFailed, &pgErr) {
			r.code = pgErr.Code
		}
		bad[hi-1] = r.reason
		found = append(found, r)
		lo = hi
	}
}

// recordsMayCause reports whether a failure may be a record's doing, so
// that looking for the record is worth it: not transient (pg.Transient:
// the database unreachable, a lost race, a cancelled context), not an
// Importer's *PermanentError (the run fails), and not PostgreSQL's
// complaint about the statement or the schema (class 42: an undefined
// column, a missing privilege), which no value causes. An older binary
// meets that one after a migration renamed a column it names (00015), and
// must leave the chunk to a newer binary, not reject its records.
func recordsMayCause(err error) bool {
	var perm *PermanentError
	var pgErr *pgconn.PgError
	switch {
	case pg.Transient(err), errors.As(err, &perm):
		return false
	case errors.As(err, &pgErr):
		return !strings.HasPrefix(pgErr.Code, "42")
	}
	return true
}

// runImporter runs imp on chunk, making a panic the chunk's error: a
// record that makes the Importer panic must fail its chunk, and then be
// found and rejected, like one the store refuses, not end the process.
func runImporter(ctx context.Context, tx pgx.Tx, imp Importer, chunk Chunk) (accepted int, rejections []importing.Rejection, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return imp.ImportChunk(ctx, tx, chunk)
}

// panicError is a panic of an Importer.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

// quoted matches what an error message may quote of a value: text in
// double or single quotes, hexadecimal bytes.
var quoted = regexp.MustCompile(`"(?:[^"]|"")*"|'(?:[^']|'')*'|\b0x[0-9A-Fa-f]+\b`)

// maxReason bounds a stored reason, in bytes.
const maxReason = 500

// unquoted returns msg without what it quotes, at most maxReason bytes:
// rejections and failures are stored, and may not hold personal data.
func unquoted(msg string) string {
	s := strings.TrimSpace(quoted.ReplaceAllString(msg, "…"))
	if len(s) > maxReason {
		s = s[:maxReason]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// refusal is the reason a record the store refused is rejected with: the
// message of PostgreSQL's error, never its detail (which quotes the row),
// and nothing it quotes.
func refusal(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return "the database refused the record: " + unquoted(pgErr.Message)
	}
	return "the record could not be applied (internal error)"
}

// failureReason is what is stored of a failed attempt at a chunk, for
// operators: the error without what it quotes (a PostgreSQL error's text
// has no detail).
func failureReason(err error) string { return unquoted(err.Error()) }
