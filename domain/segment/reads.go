package segment

import "slices"

// Reads are the facts a rule reads (Decide): what a loader must read for
// it, and nothing more. A loader that gives Decide only these facts
// (the named customer fields, the events of the named types with the
// named fields, the sales when a sales leaf reads them) gets the answer
// and the next instant it would get from all of them.
type Reads struct {
	// Fields are the customer fields its field leaves name, each once,
	// in the order first named.
	Fields []string
	// Events are the event types its event leaves name, with the event
	// fields their where leaves name (each once; empty when none).
	Events map[string][]string
	// Sales says that it has a sales leaf; Products, that one of them
	// names a product.
	Sales, Products bool
	// Segments are the segments its segment leaves name (Segments).
	Segments []string
}

// Reads returns what the rule reads.
func (r Rule) Reads() Reads {
	var out Reads
	out.add(r)
	return out
}

// Union adds what o reads to what s reads.
func (s *Reads) Union(o Reads) {
	for _, f := range o.Fields {
		s.field(f)
	}
	for t, fields := range o.Events {
		s.event(t)
		for _, f := range fields {
			s.eventField(t, f)
		}
	}
	s.Sales = s.Sales || o.Sales
	s.Products = s.Products || o.Products
	for _, k := range o.Segments {
		if !slices.Contains(s.Segments, k) {
			s.Segments = append(s.Segments, k)
		}
	}
}

// EventFields are the event fields named for any type, each once, in
// the order of the types sorted, then first named.
func (s Reads) EventFields() []string {
	var out []string
	for _, t := range s.EventTypes() {
		for _, f := range s.Events[t] {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// EventTypes are the event types named, sorted.
func (s Reads) EventTypes() []string {
	out := make([]string, 0, len(s.Events))
	for t := range s.Events {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

func (s *Reads) add(r Rule) {
	switch {
	case r.Segment != "":
		if !slices.Contains(s.Segments, r.Segment) {
			s.Segments = append(s.Segments, r.Segment)
		}
	case r.Not != nil:
		s.add(*r.Not)
	case r.Field != nil:
		s.field(r.Field.Field)
	case r.Event != nil:
		s.event(r.Event.Type)
		for _, w := range r.Event.Where {
			s.eventField(r.Event.Type, w.Field)
		}
	case r.Sales != nil:
		s.Sales = true
		s.Products = s.Products || r.Sales.ProductID != ""
	}
	for _, sub := range r.All {
		s.add(sub)
	}
	for _, sub := range r.Any {
		s.add(sub)
	}
}

func (s *Reads) field(f string) {
	if !slices.Contains(s.Fields, f) {
		s.Fields = append(s.Fields, f)
	}
}

func (s *Reads) event(t string) {
	if s.Events == nil {
		s.Events = map[string][]string{}
	}
	if _, ok := s.Events[t]; !ok {
		s.Events[t] = []string{}
	}
}

func (s *Reads) eventField(t, f string) {
	if !slices.Contains(s.Events[t], f) {
		s.Events[t] = append(s.Events[t], f)
	}
}
