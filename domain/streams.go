package domain

// StreamID names an aggregate's stream "<kind>-<company>-<id>". Each
// aggregate package names its own streams with it (customer.Stream,
// sale.Stream, ...), so that a stream's name is written in one place.
//
// Stream names are stored in the event log: changing this format, or a
// kind, would orphan every existing stream of it. Identifiers contain no
// "-", so the id is what follows the last one (datatarget reads a
// messages stream's datatarget that way).
func StreamID(kind, companyID, id string) string {
	return kind + "-" + companyID + "-" + id
}
