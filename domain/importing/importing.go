// Package importing holds the vocabulary of asynchronous imports: the
// entities that can be imported, the states of an import run and the
// per-record rejections reported on it.
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
