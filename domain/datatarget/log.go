package datatarget

import "time"

// Delivery attempt outcomes.
const (
	StatusOK   = "OK"
	StatusFail = "FAIL"
)

// LogEntry is one delivery attempt of an outlet.
type LogEntry struct {
	// EntryNumber counts the outlet's attempts from 1.
	EntryNumber int64
	// Date is taken just before the request, UTC, to the microsecond.
	Date time.Time
	// BatchNumber is the number of the batch (from 1): a retried batch
	// keeps its number.
	BatchNumber        int64
	BatchSize          int
	FirstMessageNumber int64
	// AfterUpdate is for datasync datatargets: the update_id of the last
	// update delivered before this batch.
	AfterUpdate string
	Status      string
	// HTTPStatus is 0 when no reply came.
	HTTPStatus    int
	RequestTimeMS int64
	FailReason    string
	// HTTPRequest and HTTPReply are the raw texts as sent and received
	// (the reply may be truncated, or empty when none came); they are read
	// only in the single-entry view.
	HTTPRequestAvailable bool
	HTTPRequest          string
	HTTPReply            string
}

// RawTextAAD binds a sealed raw text of an outlet's attempt (part
// "request" or "reply") to its outlet: stored, the texts are sealed with
// a key of their attempt (migration 00032), which a forgetting erases.
func RawTextAAD(outletID, part string) []byte {
	return []byte("outlet_log/" + outletID + "/" + part)
}

// Parked is a batch an outlet's failure policy set aside.
type Parked struct {
	ID                 int64
	FirstMessageNumber int64
	LastMessageNumber  int64
	BatchSize          int
	Attempts           int
	FirstFailedAt      time.Time
	ParkedAt           time.Time
	LastHTTPStatus     int
	LastFailReason     string
	// Redeliver is true once an admin asked for it to be sent again,
	// until it is.
	Redeliver bool
}
