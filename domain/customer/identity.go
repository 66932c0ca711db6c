package customer

// Kind is a kind of identity: a field that finds a customer.
type Kind string

// Identity kinds, as stored in the identity registry.
const (
	ExternalID Kind = "external_id"
	Email      Kind = "email"
	Phone      Kind = "phone"
	// Token is the customer's tracking token (customer_token), a kind
	// apart from Kinds: Clientele issues it (Book.create, Book.IssueToken)
	// and no record ever gives, moves or removes one. It finds its
	// customer only for a record that gives no identity of Kinds
	// (Record.ByToken): it travels in links and cookies, so it is weaker
	// evidence than the identifiers a client asserts, and it must never
	// take an identity from one customer to another. Forgetting frees it.
	Token Kind = "customer_token"
)

// Kinds lists the identity kinds a record gives, in their order of
// priority: a record is matched by external_id, else by email, else by
// phone number. The customer found takes them (see Book.Decide).
var Kinds = [3]Kind{ExternalID, Email, Phone}

// Field returns the record field that carries identities of kind k.
func (k Kind) Field() string {
	if k == Phone {
		return FieldPhoneNumber
	}
	return string(k)
}

// Key stands for one identity (a kind and a normalised value) of one
// company. It is opaque here: the write side uses a keyed hash, so that no
// clear identifier is stored and a forgotten person's identifiers can
// still be recognised.
type Key string

// Keys are the identity keys a customer holds, one per kind at most ("" for
// none). A customer holds the key of the value it was last given for the
// kind, unless another customer took the key since (see Book.Decide): its
// stored field may then outlive its key.
//
// Token is the key of the customer's tracking token: set when the
// customer is created (or, for a customer from before tokens, by
// IssueToken), never changed, and "" again once the customer is
// forgotten.
type Keys struct {
	ExternalID, Email, Phone, Token Key
}

// Get returns the key of kind k.
func (ks Keys) Get(k Kind) Key {
	switch k {
	case ExternalID:
		return ks.ExternalID
	case Email:
		return ks.Email
	case Token:
		return ks.Token
	}
	return ks.Phone
}

func (ks *Keys) put(k Kind, key Key) {
	switch k {
	case ExternalID:
		ks.ExternalID = key
	case Email:
		ks.Email = key
	case Token:
		ks.Token = key
	default:
		ks.Phone = key
	}
}

// State is what the write side knows of one customer: enough to decide,
// and nothing personal.
type State struct {
	ID string
	// Version is the number of events in the customer's stream.
	Version   int64
	Deleted   bool
	Forgotten bool
	Keys      Keys
}

// Book is the identity registry and the states of the customers one chunk
// of records can reach, changed in memory record by record so that each
// record sees the ones before it. The caller loads it, lets it decide each
// record in order, and writes back what changed (KeyChanges, Touched).
type Book struct {
	key       func(Kind, string) Key
	newID     func() string
	newToken  func() string
	owner     map[Key]string // "" or absent: no customer has the key
	kind      map[Key]Kind
	loaded    map[Key]string // owner at load, of the keys whose owner was set
	keyOrder  []Key
	customers map[string]*State
	touched   []string
	isTouched map[string]bool
	keys      map[identity]Key // memo of key: a keyed hash is not free
}

type identity struct {
	kind  Kind
	value string
}

// NewBook returns an empty book. key makes the key of an identity; newID
// makes the id of a new customer, and newToken its tracking token, which
// must be random (never derived from anything about the person) and
// unique: it is the whole of what finds the customer by token.
func NewBook(key func(Kind, string) Key, newID, newToken func() string) *Book {
	return &Book{key: key, newID: newID, newToken: newToken, owner: map[Key]string{}, kind: map[Key]Kind{},
		loaded: map[Key]string{}, customers: map[string]*State{}, isTouched: map[string]bool{},
		keys: map[identity]Key{}}
}

// Key returns the key of a record's identity, as the book computes it.
func (b *Book) Key(k Kind, value string) Key {
	id := identity{k, value}
	key, ok := b.keys[id]
	if !ok {
		key = b.key(k, value)
		b.keys[id] = key
	}
	return key
}

// LoadKey records a row of the registry: customerID holds key. Load every
// stored key of every identity of the records to decide, then the state
// of every customer holding one (LoadState), before the first Decide: an
// identity the book was not told about is taken for unknown.
func (b *Book) LoadKey(k Kind, key Key, customerID string) {
	b.owner[key], b.kind[key] = customerID, k
}

// LoadState records a customer's stored state.
func (b *Book) LoadState(s State) {
	b.customers[s.ID] = &s
	for _, k := range Kinds {
		if key := s.Keys.Get(k); key != "" {
			b.LoadKey(k, key, s.ID)
		}
	}
	if s.Keys.Token != "" {
		b.LoadKey(Token, s.Keys.Token, s.ID)
	}
}

// KeyChange is a registry row to write: Key now belongs to CustomerID, or
// to nobody when CustomerID is "". Before is its owner as loaded, "" when
// the registry had no row for it.
type KeyChange struct {
	Kind       Kind
	Key        Key
	CustomerID string
	Before     string
}

// KeyChanges returns the keys whose owner differs from the loaded one, in
// the order they were first changed.
func (b *Book) KeyChanges() []KeyChange {
	var out []KeyChange
	for _, key := range b.keyOrder {
		if b.owner[key] != b.loaded[key] {
			out = append(out, KeyChange{Kind: b.kind[key], Key: key, CustomerID: b.owner[key], Before: b.loaded[key]})
		}
	}
	return out
}

// Touched returns the current state of every customer a decision changed
// (created, changed, deleted, forgotten, or losing a key), in the order
// they were first changed.
func (b *Book) Touched() []State {
	out := make([]State, len(b.touched))
	for i, id := range b.touched {
		out[i] = *b.customers[id]
	}
	return out
}

func (b *Book) touch(id string) {
	if !b.isTouched[id] {
		b.isTouched[id] = true
		b.touched = append(b.touched, id)
	}
}

func (b *Book) setOwner(k Kind, key Key, id string) {
	if _, ok := b.loaded[key]; !ok {
		b.loaded[key] = b.owner[key]
		b.keyOrder = append(b.keyOrder, key)
	}
	b.owner[key], b.kind[key] = id, k
}
