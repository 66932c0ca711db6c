package customer

import (
	"fmt"
	"slices"
)

// Outcome is what Decide made of an accepted record: the events to append
// to the customer's stream, in this order.
type Outcome struct {
	CustomerID string
	// Created: the record created the customer; Changes is set.
	Created bool
	// Changes, when not nil, is a CustomerUpserted.
	Changes *Changes
	// Deleted is a CustomerDeleted; Forgotten a CustomerForgotten.
	Deleted, Forgotten bool
}

// Events returns the number of events of o; 0 for a record accepted
// without effect.
func (o Outcome) Events() int {
	n := 0
	for _, b := range []bool{o.Changes != nil, o.Deleted, o.Forgotten} {
		if b {
			n++
		}
	}
	return n
}

// Decide applies one record to the book and returns its outcome, or a
// *Problem when the record is rejected (the book is then unchanged). Any
// other error means the book was not loaded as LoadKey requires.
//
// Resolution. The record's customer is:
//
//  1. with an external_id that a customer holds: that customer;
//  2. with an external_id nobody holds: the first of the holders of its
//     email and of its phone number that has no external_id and is not
//     deleted (it is adopted: it gets the external_id); else a new one;
//  3. without external_id: the holder of its email, else of its phone
//     number, else a new one.
//
// The customer found takes every identity the record gives: a key held by
// another customer moves to it (that customer keeps its stored field but
// is no longer found by it), and a key it held for another value of the
// same kind is freed. So when the email finds A and the phone number is
// B's, A wins and B's phone key moves to A. An identity sent as "" is
// freed too. canonical_id is a plain field: it groups, it never merges.
//
// Tracking tokens. A created customer is issued one (newToken, in
// Changes.Set as customer_token); no record sets, moves or removes one. A
// record that gives no identity but a customer_token (ByToken) is the
// customer holding the token; when nobody does (a token never issued, of
// another company, or of a forgotten customer), it is rejected with
// ReasonNoMatch, whatever it asks: a token cannot create a customer. A
// token beside another identity is ignored.
//
// States. A record that gives any identity of a forgotten customer is
// rejected (ReasonForgotten), so forgetting can never be undone by
// importing the person again; only a repeated is_forgotten for that very
// customer is accepted, without effect. A deleted customer accepts
// is_deleted again (without effect) and is_forgotten; anything else is
// rejected (ReasonDeleted). is_deleted or is_forgotten true deletes or
// forgets the customer found and applies none of the record's other
// fields (they would only add data about someone being removed); with no
// customer found it is rejected (ReasonNoMatch). Forgetting frees the
// customer's token, so that it matches nobody; a deleted customer keeps
// it (and a record naming it is rejected as for the deleted). Otherwise
// the record creates or updates the customer with its Changes; a created
// customer gets false for every permission the record omits.
func (b *Book) Decide(r Record) (Outcome, error) {
	var keys [len(Kinds)]Key
	var owners [len(Kinds)]string
	for i, k := range Kinds {
		if v := r.Identity(k); v != "" {
			keys[i] = b.Key(k, v)
			owners[i] = b.owner[keys[i]]
			if owners[i] != "" && b.customers[owners[i]] == nil {
				return Outcome{}, fmt.Errorf("customer: state of %s not loaded", owners[i])
			}
		}
	}
	target := b.resolve(r, owners)
	if r.ByToken() {
		var err error
		if target, err = b.tokenOwner(r.Token); err != nil {
			return Outcome{}, err
		}
		if target == "" {
			return Outcome{}, &Problem{Field: FieldToken, Reason: ReasonNoMatch}
		}
	}
	if s := b.customers[target]; s != nil && s.Forgotten && r.Forget {
		return Outcome{CustomerID: target}, nil
	}
	for i, o := range owners {
		if o != "" && b.customers[o].Forgotten {
			return Outcome{}, &Problem{Field: Kinds[i].Field(), Reason: ReasonForgotten}
		}
	}
	if target == "" {
		switch {
		case r.MustExist:
			return Outcome{}, &Problem{Field: firstIdentity(r), Reason: ReasonNoMatch}
		case r.Forget:
			return Outcome{}, &Problem{Field: FieldIsForgotten, Reason: ReasonNoMatch}
		case r.Delete:
			return Outcome{}, &Problem{Field: FieldIsDeleted, Reason: ReasonNoMatch}
		}
		return b.create(r, keys), nil
	}
	s := b.customers[target]
	out := Outcome{CustomerID: target}
	switch {
	case r.Forget:
		out.Deleted, out.Forgotten = r.Delete && !s.Deleted, true
		s.Deleted, s.Forgotten = s.Deleted || r.Delete, true
		if s.Keys.Token != "" {
			// Unlike the other identities, whose keys stay to refuse
			// the person's return, the token then matches nobody.
			b.setOwner(Token, s.Keys.Token, "")
			s.Keys.Token = ""
		}
	case r.Delete:
		out.Deleted = !s.Deleted
		s.Deleted = true
	case s.Deleted:
		return Outcome{}, &Problem{Field: FieldIsDeleted, Reason: ReasonDeleted}
	default:
		held := s.Keys
		b.claim(s, r, keys)
		if c := r.Changes.clone(); !r.Embedded || c.dropHeld(held, keys) {
			out.Changes = &c
		}
	}
	if n := out.Events(); n > 0 {
		s.Version += int64(n)
		b.touch(target)
	}
	return out, nil
}

// firstIdentity names the field of r's first identity, for a rejection.
func firstIdentity(r Record) string {
	for _, k := range Kinds {
		if r.Identity(k) != "" {
			return k.Field()
		}
	}
	return ""
}

// dropHeld removes from c the identity fields whose key the customer
// already held before the record (the stored value is that very value),
// and reports whether anything is left to change: a record that only
// names its customer, as events do, appends no event.
func (c *Changes) dropHeld(held Keys, keys [len(Kinds)]Key) bool {
	for i, k := range Kinds {
		if keys[i] != "" && keys[i] == held.Get(k) {
			delete(c.Set, k.Field())
		}
	}
	return len(c.Set)+len(c.Unset)+len(c.Add)+len(c.Remove) > 0
}

func (b *Book) resolve(r Record, owners [len(Kinds)]string) string {
	if r.ExternalID == "" {
		if owners[1] != "" {
			return owners[1]
		}
		return owners[2]
	}
	if owners[0] != "" {
		return owners[0]
	}
	for _, o := range owners[1:] {
		if s := b.customers[o]; s != nil && s.Keys.ExternalID == "" && !s.Deleted && !s.Forgotten {
			return o
		}
	}
	return ""
}

// tokenOwner returns the customer holding the token, "" for nobody. A
// forgotten holder is nobody too: forgetting frees the token, and a
// registry row that outlived it (written by a process from before tokens
// were freed) must not make the token find the forgotten person.
func (b *Book) tokenOwner(token string) (string, error) {
	id := b.owner[b.Key(Token, token)]
	if id == "" {
		return "", nil
	}
	s := b.customers[id]
	if s == nil {
		return "", fmt.Errorf("customer: state of %s not loaded", id)
	}
	if s.Forgotten {
		return "", nil
	}
	return id, nil
}

func (b *Book) create(r Record, keys [len(Kinds)]Key) Outcome {
	s := &State{ID: b.newID(), Version: 1}
	b.customers[s.ID] = s
	b.touch(s.ID)
	b.claim(s, r, keys)
	c := r.Changes.clone()
	for _, p := range Permissions {
		if _, ok := c.Set[p]; !ok {
			c.set(p, false)
		}
	}
	b.giveToken(s, &c)
	return Outcome{CustomerID: s.ID, Created: true, Changes: &c}
}

// giveToken issues s a tracking token: its key goes to the registry and
// the token itself into c, sealed with the customer's other data (so
// retrieval shows it, and forgetting shreds it with the rest).
func (b *Book) giveToken(s *State, c *Changes) {
	token := b.newToken()
	s.Keys.Token = b.key(Token, token)
	b.setOwner(Token, s.Keys.Token, s.ID)
	c.set(FieldToken, token)
}

// IssueToken gives a tracking token to a customer from before tokens
// were issued: one loaded with LoadState that has none and is neither
// deleted nor forgotten (a deleted customer is never shown again, and a
// forgotten one must match nobody). The outcome is a CustomerUpserted
// setting customer_token alone; ok is false, and the book unchanged,
// for any other customer.
func (b *Book) IssueToken(id string) (_ Outcome, ok bool) {
	s := b.customers[id]
	if s == nil || s.Keys.Token != "" || s.Deleted || s.Forgotten {
		return Outcome{}, false
	}
	var c Changes
	b.giveToken(s, &c)
	s.Version++
	b.touch(id)
	return Outcome{CustomerID: id, Changes: &c}, true
}

// claim gives s every identity of r and frees those r removes.
func (b *Book) claim(s *State, r Record, keys [len(Kinds)]Key) {
	for i, k := range Kinds {
		cur := s.Keys.Get(k)
		switch {
		case keys[i] != "" && keys[i] != cur:
			if cur != "" {
				b.setOwner(k, cur, "")
			}
			if prev := b.owner[keys[i]]; prev != "" {
				b.customers[prev].Keys.put(k, "")
				b.touch(prev)
			}
			b.setOwner(k, keys[i], s.ID)
			s.Keys.put(k, keys[i])
		case keys[i] == "" && cur != "" && slices.Contains(r.Changes.Unset, k.Field()):
			b.setOwner(k, cur, "")
			s.Keys.put(k, "")
		default:
			continue
		}
		b.touch(s.ID)
	}
}
