package imports

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"
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
// cure, its next attempts find the records that fail it and reject them,
// and apply the rest in the same one transaction as ever (exactly once:
// events, rejections, counts and the payload's deletion commit together).
//
// The search applies prefixes of the chunk under savepoints, each rolled
// back: a prefix is the records in upload order, so each probe sees every
// earlier record (the later record wins, identity resolution finds the
// earlier ones) exactly as the chunk's one application will. A transaction
// holds one event store commit (AppendTx refuses a second), and a probe
// rolled back leaves none; only the last probe, the whole chunk with the
// records found rejected, is kept, and it is the chunk's application.
//
// The search runs inside the chunk's transaction, which holds back
// pg_snapshot_xmin (every log reader of the server) while it is open, and
// its cost grows with the records found times the chunk's size. So an
// attempt makes at most isolateProbes probes, and stops once it has found
// a record and searched for isolateFor; it then ends as a failure that
// keeps its progress on the chunk (isolationPaused, Isolation), and
// the next attempt goes on from there, with the records found rejected.
//
// Savepoints: PostgreSQL keeps the XIDs of a transaction's live and
// released subtransactions in a cache of 64 per backend (PGPROC subxids);
// past that it overflows, and every snapshot taken on the server while the
// transaction lasts must look its subtransactions up in pg_subtrans. A
// subtransaction rolled back leaves the cache (XidCacheRemoveRunningXids),
// but ROLLBACK TO SAVEPOINT, which is all pgx's savepoint Rollback sends,
// keeps the savepoint, and a new subtransaction in it: the next probe is
// nested in it and, by writing, gives it an XID that stays (with pgx's
// Begin/Rollback, 800 probes left 799 live XIDs in the transaction). So a
// probe's savepoint is released right after it is rolled back; the
// transaction then holds its own XID and the kept probe's alone.

// isolateAfter is the attempt of a chunk at which the worker looks for the
// records that fail it, counting the attempts that failed for a reason
// retrying does not cure. Not the first: an error misjudged as lasting
// gets two more tries as it is. Not much later: the company's imports
// wait meanwhile. A delivery tries 5 times within a second or so, so the
// search starts in the chunk's first delivery.
const isolateAfter = 3

// isolateProbes bounds the probes of one attempt (a chunk of 2^13 records
// or more gets the few more that finding one record may take:
// probeBudget). Each is at most an application of the chunk.
const isolateProbes = 32

// isolateFor is how long an attempt searches once it has found a record.
// Before that it goes on (within isolateProbes), so every attempt gets
// somewhere.
const isolateFor = 2 * time.Second

// probeBudget is the most probes an attempt at a chunk of n records makes:
// isolateProbes, or what finding one record may take (the probe of none,
// doubling steps to n, halving back, the check of a prefix known from an
// earlier attempt), if that is more.
func probeBudget(n int) int {
	return max(isolateProbes, 3+2*(bits.Len(uint(n))+1))
}

// isolationPaused is the error of an attempt that ran out of its budget
// while looking for the records that fail its chunk: Handle keeps
// progress on the chunk (Store.RecordIsolation) for the next
// attempt to go on from.
type isolationPaused struct {
	progress Isolation
	found    int // in this attempt
	probes   int
}

func (e *isolationPaused) Error() string {
	return fmt.Sprintf("looking for the records the store refuses: %d found so far, %d by this attempt in %d probes; the next attempt goes on",
		len(e.progress.Records), e.found, e.probes)
}

// prober applies prefixes of a chunk under savepoints of tx.
type prober struct {
	ctx    context.Context
	tx     pgx.Tx
	imp    Importer
	chunk  Chunk
	probes int
}

// prefixable is a Prepared that can be cut to its first n records without
// work: every Preparer's (parseChunk's).
type prefixable interface {
	prefix(n int) Prepared
}

// prefix returns the first n records as parsed. The records are shared,
// as between ahead.go and the chunk's transaction: an Importer treats
// them as read-only (the events importer's only write, product_id into
// Fields, overwrites the field each time before it reads it).
func (p *parsed[R]) prefix(n int) Prepared {
	return &parsed[R]{records: p.records[:n:n], problems: p.problems[:n:n]}
}

// try applies the chunk's first n records with the records of reject
// rejected, in a savepoint that it releases when keep is set and the
// Importer succeeded, and rolls back (then releases) otherwise. failed is
// the Importer's error; err is an error of the savepoint itself, which
// leaves tx unusable.
func (p *prober) try(n int, reject map[int]string, keep bool) (out importing.Outcome, failed, err error) {
	p.probes++
	if _, err := p.tx.Exec(p.ctx, "SAVEPOINT isolate_probe"); err != nil {
		return importing.Outcome{}, nil, err
	}
	c := p.chunk
	c.Records, c.Reject = c.Records[:n], reject
	if n < len(p.chunk.Records) {
		c.Prepared = nil
		if pp, ok := p.chunk.Prepared.(prefixable); ok {
			c.Prepared = pp.prefix(n)
		}
	}
	out, failed = runImporter(p.ctx, p.tx, p.imp, c)
	if failed == nil && keep {
		_, err = p.tx.Exec(p.ctx, "RELEASE SAVEPOINT isolate_probe")
		return out, nil, err
	}
	_, err = p.tx.Exec(p.ctx, "ROLLBACK TO SAVEPOINT isolate_probe; RELEASE SAVEPOINT isolate_probe")
	return out, failed, err
}

// prepare returns the chunk's Prepared or, when it has none and imp is a
// Preparer, its records prepared now, once for all the probes, without
// the records of reject (a record may be rejected because parsing it
// panics); nil when preparing panics: each probe then parses, and the
// record is found like any other.
func prepare(imp Importer, chunk Chunk, reject map[int]string) (prepared Prepared) {
	p, ok := imp.(Preparer)
	if chunk.Prepared != nil || !ok {
		return chunk.Prepared
	}
	defer func() {
		if recover() != nil {
			prepared = nil
		}
	}()
	records := chunk.Records
	if len(reject) > 0 {
		records = slices.Clone(records)
		for i := range reject {
			records[i] = nil
		}
	}
	return p.Prepare(chunk.Company, records)
}

// isolate applies the chunk, rejecting the records the store refuses, and
// returns what the Importer made of it (the records rejected so count in
// no warning: the Importer never parsed them) and every record it
// rejected so,
// from earlier attempts (from) and this one. It returns an error, and
// rejects nothing, when the failure is not a record's: when applying none
// of the records fails too, or when a probe fails for a reason
// recordsMayCause denies (an outage during the search must never reject
// good records: the chunk is retried later as ever). When the attempt's
// budget runs out first, the error is an *isolationPaused.
func isolate(ctx context.Context, tx pgx.Tx, imp Importer, chunk Chunk, from Isolation) (importing.Outcome, []IsolatedRecord, error) {
	start := time.Now()
	n := len(chunk.Records)
	// bad holds the records found, by position, found them in the order
	// found; every one is before lo, and the first lo records without them
	// apply (sure, once a probe of this attempt said so: lo may come from an
	// earlier attempt, and the state the chunk meets may have changed since).
	bad := map[int]string{}
	var found []IsolatedRecord
	for _, r := range from.Records {
		if i := r.Index - chunk.FirstIndex; i >= 0 && i < n {
			bad[i] = r.Reason
			found = append(found, r)
		}
	}
	known := len(found)
	lo := min(max(from.Applies, 0), n)
	sure := lo == 0
	chunk.Prepared = prepare(imp, chunk, bad)
	p := &prober{ctx: ctx, tx: tx, imp: imp, chunk: chunk}
	budget := probeBudget(n)
	spent := func() bool {
		return p.probes >= budget || (len(found) > known && time.Since(start) >= isolateFor)
	}
	paused := func() error {
		return &isolationPaused{progress: Isolation{Applies: lo, Records: found}, found: len(found) - known, probes: p.probes}
	}

	none := make(map[int]string, n)
	for i := range n {
		none[i] = "not applied"
	}
	if _, failed, err := p.try(n, none, false); err != nil || failed != nil {
		return importing.Outcome{}, nil, errors.Join(failed, err)
	}
	whole := true
	for {
		// hi is a prefix found to fail, with hiFailed its failure; 0 until
		// one is.
		hi := 0
		var hiFailed error
		fail := func(end int, failed error) error {
			switch {
			case !recordsMayCause(failed):
				return failed
			case end > lo:
				hi, hiFailed = end, failed
			case sure:
				// Every record applies on its own terms, yet the chunk
				// fails: not a record's doing.
				return failed
			default:
				// The records an earlier attempt applied fail now.
				hi, hiFailed, lo = end, failed, 0
				sure = true
			}
			return nil
		}
		if whole {
			// The whole chunk first: the records known may be all there are.
			whole = false
			out, failed, err := p.try(n, bad, true)
			if err != nil {
				return importing.Outcome{}, nil, errors.Join(failed, err)
			}
			if failed == nil {
				return out, found, nil
			}
			if err := fail(n, failed); err != nil {
				return importing.Outcome{}, nil, err
			}
		}
		// The first failing prefix, by steps doubling from lo (records that
		// fail come in clusters as often as alone), up to hi or, when none
		// is known, to the whole chunk, kept if it applies; then halving.
		for step := 1; hi == 0 || lo+step < hi; step *= 2 {
			end := min(lo+step, n)
			if spent() {
				return importing.Outcome{}, nil, paused()
			}
			out, failed, err := p.try(end, bad, end == n)
			if err != nil {
				return importing.Outcome{}, nil, errors.Join(failed, err)
			}
			if failed == nil && end == n {
				return out, found, nil
			}
			if failed == nil {
				lo, sure = end, true
				continue
			}
			if err := fail(end, failed); err != nil {
				return importing.Outcome{}, nil, err
			}
			break
		}
		for {
			for hi-lo > 1 {
				mid := lo + (hi-lo)/2
				if spent() {
					return importing.Outcome{}, nil, paused()
				}
				_, failed, err := p.try(mid, bad, false)
				if err != nil {
					return importing.Outcome{}, nil, errors.Join(failed, err)
				}
				if failed == nil {
					lo, sure = mid, true
				} else if err := fail(mid, failed); err != nil {
					return importing.Outcome{}, nil, err
				}
			}
			if sure {
				break
			}
			// Record lo would be blamed on an earlier attempt's word that the
			// first lo records apply: check it.
			if spent() {
				return importing.Outcome{}, nil, paused()
			}
			_, failed, err := p.try(lo, bad, false)
			if err != nil {
				return importing.Outcome{}, nil, errors.Join(failed, err)
			}
			if failed == nil {
				sure = true
			} else if err := fail(lo, failed); err != nil {
				return importing.Outcome{}, nil, err
			}
		}
		// The first hi-1 records apply and the first hi do not: record
		// hi-1 fails the chunk.
		r := IsolatedRecord{Index: chunk.FirstIndex + hi - 1, Reason: refusal(hiFailed)}
		var pgErr *pgconn.PgError
		if errors.As(hiFailed, &pgErr) {
			r.Code = pgErr.Code
		}
		bad[hi-1] = r.Reason
		found = append(found, r)
		lo = hi
	}
}

// recordsMayCause reports whether a failure may be a record's doing, so
// that looking for the record is worth it: not transient (lostRace: the
// database unreachable, a lost race, a cancelled context), not an
// Importer's *PermanentError (the run fails), and not PostgreSQL's
// complaint about the statement or the schema (pg.SchemaMismatch, class
// 42: an undefined column, a missing privilege), which no value causes.
// An older binary meets that one after a migration renamed a column it
// names (00015), and must leave the chunk to a newer binary, not reject
// its records.
func recordsMayCause(err error) bool {
	var perm *PermanentError
	switch {
	case lostRace(err), errors.As(err, &perm), pg.SchemaMismatch(err):
		return false
	}
	return true
}

// runImporter runs imp on chunk, making a panic the chunk's error: a
// record that makes the Importer panic must fail its chunk, and then be
// found and rejected, like one the store refuses, not end the process.
func runImporter(ctx context.Context, tx pgx.Tx, imp Importer, chunk Chunk) (out importing.Outcome, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return imp.ImportChunk(ctx, tx, chunk)
}

// resolveChunk returns the chunk's resolution: the one resolved ahead, if
// any, else one resolved now in tx. A panic of the Resolver is an error,
// as in runImporter.
func resolveChunk(ctx context.Context, tx pgx.Tx, r Resolver, chunk Chunk, ahead Resolution) (res Resolution, err error) {
	if ahead != nil {
		return ahead, nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return r.Resolve(ctx, tx, chunk, nil)
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
