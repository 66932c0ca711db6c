// Package importing holds the vocabulary of asynchronous imports: the
// entities that can be imported, the states of an import run, and the
// per-record rejections and the ignored fields (warnings) reported on it.
package importing

// Entity is an importable entity type, as named in upload paths.
type Entity string

// Importable entities.
const (
	Customers Entity = "customers"
	Products  Entity = "products"
	Events    Entity = "events"
	Sales     Entity = "sales"
	Shops     Entity = "shops"
)

// State is the state of an import run.
type State string

// Run states. A run is "receiving" while its upload is being staged (never
// shown: the upload answers only once staging is complete), then
// scheduled, running, and completed; failed means the run could not be
// processed at all (per-record problems are rejections, not failures).
const (
	Receiving State = "receiving"
	Scheduled State = "scheduled"
	Running   State = "running"
	Completed State = "completed"
	Failed    State = "failed"
)

// Rejection is one record that was not imported, and why. Reasons never
// quote the offending value: rejections are kept, and a value may be
// personal data that must be forgettable.
type Rejection struct {
	// Index is the record's position in the upload, from 0.
	Index int `json:"index"`
	// Reason says what is wrong, for the client to fix.
	Reason string `json:"reason"`
	// Field is the offending field, when one is.
	Field string `json:"field,omitempty"`
}

// Warning is a field that was ignored in the imported records of a run: a
// key that is no field of the entity (values.Ignored), listed once however
// many records carried it. The records were imported without it.
type Warning struct {
	// Field is the key as the records named it (a nested key by its path
	// without list indexes, such as sale_rows.store_id), or
	// values.UnnamedField for keys that do not look like field names.
	Field string `json:"field"`
	// Count is the number of imported records that carried it; a record
	// rejected for another reason does not count.
	Count int `json:"count"`
	// FirstIndex is the upload index of the first of them.
	FirstIndex int `json:"first_index"`
}

// MaxWarnings bounds the distinct fields a run lists as warnings: the
// first ones found, in upload order. A CSV file of a hundred thousand odd
// columns thus costs the run a thousand rows, and a client has enough to
// see what its plugin sends.
const MaxWarnings = 1000

// Outcome is what the import of one chunk made of its records.
type Outcome struct {
	// Accepted is the number of records imported.
	Accepted int
	// Rejections are the records not imported, and why; a record may
	// have more than one.
	Rejections []Rejection
	// Warnings are the fields ignored in the records imported, each
	// once, ordered by FirstIndex then Field, at most MaxWarnings.
	Warnings []Warning
}
