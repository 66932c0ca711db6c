package imports

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
)

// ImportWorkerConfig configures an ImportWorker. Zero optional fields take
// the defaults documented on each.
type ImportWorkerConfig struct {
	// Pool is the database of the staged chunks and of the Importers'
	// transactions. Required.
	Pool *pgxpool.Pool
	// Keys opens the staged chunks, sealed by the staging (chunk_seal.go).
	// Required.
	Keys crypto.KeyStore
	// Importers apply the chunks of each entity. Required, not empty.
	Importers map[importing.Entity]Importer
	// Companies loads the company of each chunk. Required.
	Companies CompanyFinder
	// Transactions runs each chunk's transaction and commits it: the
	// event store the Importers append with (its InTx), so that a chunk
	// commits at the store's commit point. Default: plain transactions
	// on Pool, right for the PostgreSQL event store only.
	Transactions Transactor
	// Transport delivers the chunk messages. Default: Watermill over
	// PostgreSQL on Pool, one message per batch.
	Transport bus.Transport
	// Registerer receives the worker's metrics (failed chunk attempts,
	// records rejected because the store refused them, companies whose
	// imports stand still). Default: none registered.
	Registerer prometheus.Registerer
	// ConsumerSettings are the Logger (the worker's and Watermill's
	// logs), PollInterval (how often an idle worker looks for chunks),
	// RetryMaxInterval, MessageAttempts and StallAfter of the worker's
	// chunk consumer, whose keys are companies: MessageAttempts counts
	// the attempts of one delivery of a chunk, which is never skipped
	// (see ImportWorker.handle); StallAfter is how long a company's
	// import may stand still with chunks pending before the worker
	// retries them itself.
	bus.ConsumerSettings
	// AbandonAfter is how long an upload may stage nothing before it is
	// taken for abandoned (its process died) and deleted. Default 1h.
	AbandonAfter time.Duration
	// CleanUpInterval is how often abandoned uploads are looked for.
	// Default 10m.
	CleanUpInterval time.Duration
	// Now is the clock of the clean-up. Default time.Now.
	Now func() time.Time
	// AfterChunk, when set, is called after a chunk's transaction
	// committed and before its message is acked. It is a test seam (the
	// crash test kills the process there); leave it nil.
	AfterChunk func(runID string, seq int)
}

func (c *ImportWorkerConfig) setDefaults() {
	c.ConsumerSettings.SetDefaults()
	if c.AbandonAfter == 0 {
		c.AbandonAfter = time.Hour
	}
	if c.CleanUpInterval == 0 {
		c.CleanUpInterval = 10 * time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem of the configuration at once.
func (c ImportWorkerConfig) Validate() error {
	var errs []error
	if c.Pool == nil {
		errs = append(errs, errors.New("imports: ImportWorkerConfig.Pool is required"))
	}
	if c.Keys.Keyring == nil {
		errs = append(errs, errors.New("imports: ImportWorkerConfig.Keys is required"))
	}
	if len(c.Importers) == 0 {
		errs = append(errs, errors.New("imports: ImportWorkerConfig.Importers is empty"))
	}
	for e, imp := range c.Importers {
		if imp == nil || imp.Entity() != e {
			errs = append(errs, fmt.Errorf("imports: ImportWorkerConfig.Importers[%q] is nil or imports another entity", e))
		}
	}
	if c.Companies == nil {
		errs = append(errs, errors.New("imports: ImportWorkerConfig.Companies is required"))
	}
	errs = append(errs, c.ConsumerSettings.Validate("imports: ImportWorkerConfig."))
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"AbandonAfter", c.AbandonAfter}, {"CleanUpInterval", c.CleanUpInterval}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("imports: ImportWorkerConfig.%s is negative", d.name))
		}
	}
	return errors.Join(errs...)
}
