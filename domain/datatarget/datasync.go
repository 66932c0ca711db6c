package datatarget

// Datatype is the entity type a datasync datatarget follows, named as in
// the retrieval paths (/api/data/<datatype>/).
type Datatype string

// Datatypes of the interface.
const (
	Customers Datatype = "customers"
	Products  Datatype = "products"
	Events    Datatype = "events"
	Sales     Datatype = "sales"
	Shops     Datatype = "shops"
	Campaigns Datatype = "campaigns"
	// Segment follows the entries and exits of one segment (addition;
	// Settings.SegmentKey).
	Segment Datatype = "segment"
)

// datatypes are the interface's datatypes; the value says whether datasync
// of it is built. A datatype is available once the async projection
// "datasync" has a feed for it (projections/datasync_<datatype>.go, which
// needs the entity's read-side fold): adding one is writing that feed,
// registering it in datasync.NewDatasync (projections/datasync), and setting its value here.
// Campaigns are the exception: a campaign's message holds its statistics,
// which the campaign_stats projection computes, so that projection writes
// them (projections/campaignstats/sync.go); and so are segments: their
// entries and exits are decided by the segment_members projection, which
// writes their messages (projections/segments/feed.go).
var datatypes = map[Datatype]bool{
	Customers: true,
	Products:  true,
	Events:    true,
	Sales:     true,
	Shops:     true,
	Campaigns: true,
	Segment:   true,
}

// Available reports whether datasync datatargets of t can be created.
func (t Datatype) Available() bool { return datatypes[t] }

// isKnown reports whether t is a datatype of the interface.
func isKnown(t Datatype) bool {
	_, ok := datatypes[t]
	return ok
}

// Settings are what a datasync datatarget follows; a messages datatarget
// has none (the zero value).
type Settings struct {
	// Datatype is the entity type whose changes become messages.
	Datatype Datatype `json:"datatype"`
	// Fields restricts each message's data to these fields (besides id,
	// is_deleted and is_forgotten, which every message carries so that a
	// receiver can always tell which entity changed and how). nil means
	// every field.
	Fields []string `json:"fields,omitempty"`
	// FromStart makes the datatarget begin with every change since the
	// start of the log, not only those after its creation (for a
	// segment: with its members at the creation, as entries).
	FromStart bool `json:"from_start,omitempty"`
	// SegmentKey names the segment whose entries and exits a datatarget
	// of datatype segment follows; required for it, refused for others.
	SegmentKey string `json:"segment_key,omitempty"`
}

// IsZero reports whether s is the settings of a messages datatarget.
func (s Settings) IsZero() bool {
	return s.Datatype == "" && len(s.Fields) == 0 && !s.FromStart && s.SegmentKey == ""
}

// ForgetLockClass is the first key of the transaction-level advisory lock
// (second key: hashtext of the datatarget id) that orders the anonymising
// of a datasync datatarget's messages against its outlets' attempt logs.
// The datasync projection holds it exclusively while it rewrites a
// forgotten person's messages and erases the raw texts of the attempts
// that carried them; an outlet worker holds it shared while it checks
// that the messages it just logged were not rewritten meanwhile. Either
// the projection sees the worker's entry, or the worker sees the rewrite.
const ForgetLockClass = 0x44534647 // "DSFG"
