package sale

import (
	"maps"
	"math/big"
	"slices"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
)

// State is what the write side keeps of a sale: enough to find it, to
// append to its stream and to decide an upload that names it again.
type State struct {
	ID, ExternalID string
	// CustomerID is the internal id of the sale's customer ("" until the
	// importer sets it with Book.SetCustomer for a new sale).
	CustomerID string
	Version    int64
	// Currency is the sale's currency ("" is the company's), Rate the
	// exchange rate its amounts were converted with ("" for a sale in the
	// company's currency), SaleState its sale_state.
	Currency, Rate, SaleState string
	// HasTotal: the sale has a sale_total of its own, so its rows need no
	// unit_price.
	HasTotal bool
	// Totals are the totals of the sale's rows that are not deleted, by
	// row key (a row without total counts nothing), and Discount its
	// sale_discount: what the read side sums into the derived sale_total,
	// which Decide keeps within an int64 whatever the later records add.
	Totals   map[string]int64
	Discount int64
}

// Book holds the sales a chunk's records name, loaded before deciding and
// updated by each decision.
type Book struct {
	newID     func() string
	currency  string
	customers *customer.Parser
	rates     map[string]string
	sales     map[string]*State // by sale_external_id
	touched   []*State          // in the order first changed
}

// NewBook returns an empty book; newID makes the ids of new sales, and c
// gives the default currency and the exchange-rate table.
func NewBook(newID func() string, c company.Company) *Book {
	return &Book{newID: newID, currency: c.Currency, customers: customer.NewParser(c), rates: c.ExchangeRates, sales: map[string]*State{}}
}

// Load adds a stored sale.
func (b *Book) Load(s State) { b.sales[s.ExternalID] = &s }

// SetCustomer records the customer the importer resolved for a new sale.
func (b *Book) SetCustomer(saleID, customerID string) {
	for _, s := range b.sales {
		if s.ID == saleID && s.CustomerID != customerID {
			s.CustomerID = customerID
			b.touch(s)
		}
	}
}

// Touched returns the sales that changed since loaded, for the write side
// to save.
func (b *Book) Touched() []State {
	out := make([]State, len(b.touched))
	for i, s := range b.touched {
		out[i] = *s
	}
	return out
}

func (b *Book) touch(s *State) {
	if !slices.Contains(b.touched, s) {
		b.touched = append(b.touched, s)
	}
}

// Decide decides a transaction against its stored sale (none: a new
// sale) and returns what its accepted records do, and the rejected ones.
//
// A record is rejected alone for a problem of its own rows: a row without
// unit_price (or unit_price_in_currency) when the sale has no sale_total
// (given by these records or stored), an amount that does not fit in an
// int64 once converted or computed. The totals of the sale's rows (stored
// and given) minus sale_discount must fit too, whether or not sale_total
// is given (it may be removed later, and then that is the total): when
// they do not, the last record that gives rows or sale_discount is
// rejected, and the others decided again without it (decide_total.go).
// Every record is rejected, each with the reason, for a problem of the
// transaction: a bad transaction field (Record.TxProblem), a new sale
// without sale_date or a customer identifier, a currency without an
// exchange rate, customer fields without a customer identifier. A
// rejected record contributes nothing:
// the transaction fields are those of the accepted records, merged in
// order (the later value wins), so rejecting one may reject the others
// (a new sale whose only sale_date was on it).
//
// Amounts: the _in_currency amounts replace their counterparts, divided
// by the sale's rate and rounded half away from zero to minor units; a
// row without total gets unit_price × quantity − discount, rounded the
// same way. A new sale gets sale_state COMPLETE when none is given, and
// its currency (the company's when none is given) in Set.
func (b *Book) Decide(t Transaction) (Outcome, []Rejected) {
	d := &decision{Book: b, t: t, s: b.sales[t.ExternalID], errs: make([]error, len(t.Records))}
	var first *Problem
	for _, r := range t.Records {
		if first == nil {
			first = r.TxProblem
		}
	}
	if first != nil {
		for i, r := range t.Records {
			d.errs[i] = first
			if r.TxProblem != nil {
				d.errs[i] = r.TxProblem
			}
		}
		return Outcome{}, d.rejected()
	}
	for {
		d.merge()
		if len(d.accepted) == 0 {
			return Outcome{}, d.rejected()
		}
		if p := d.transaction(); p != nil {
			for _, i := range d.accepted {
				d.errs[i] = p
			}
			return Outcome{}, d.rejected()
		}
		// A record rejected for its rows changes the merged fields:
		// decide again without it.
		if !d.rows() {
			continue
		}
		if i, p := d.total(); p != nil {
			d.errs[i] = p
			continue
		}
		return d.outcome(), d.rejected()
	}
}

// decision is the work of one Decide.
type decision struct {
	*Book
	t    Transaction
	s    *State // nil: a new sale
	errs []error

	accepted []int
	tx       map[string]any
	currency string
	rate     *big.Rat // nil: the company's currency
	rateText string
	customer *customer.Record
	hasTotal bool
	out      []RowOutcome
	byKey    map[string]int // index in out
	totals   map[string]int64
	discount int64
}

func (d *decision) rejected() []Rejected {
	var out []Rejected
	for i, err := range d.errs {
		if err != nil {
			out = append(out, Rejected{Record: i, Err: err})
		}
	}
	return out
}

// merge combines the transaction fields of the records not rejected.
func (d *decision) merge() {
	d.accepted, d.tx = d.accepted[:0], map[string]any{}
	for i, r := range d.t.Records {
		if d.errs[i] == nil {
			d.accepted = append(d.accepted, i)
			maps.Copy(d.tx, r.Tx)
		}
	}
}
