package values

// Problem is why an imported record is rejected, for every entity: the
// field at fault, as the record named it, when one is, and a reason that
// never quotes the value, since rejections are stored and the value may
// be personal data. Each entity package names it Problem (an alias), and
// the import worker tells a rejection from a failure by this one type.
type Problem struct {
	Field  string
	Reason string
}

func (p *Problem) Error() string {
	if p.Field == "" {
		return p.Reason
	}
	return p.Field + ": " + p.Reason
}
