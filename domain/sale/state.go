package sale

import (
	"slices"
	"strings"
)

// stateAliases are the shop platforms' spellings of sale_state, each read
// as the interface's state that means the same for statistics
// (docs/sales.md, "States"), in the form normalState compares: upper
// case, with "_" for "-" and spaces. Magento 2 sends its order state
// upper-cased and WooCommerce its order status; the other values they
// send are interface states already.
var stateAliases = []struct{ alias, state string }{
	// Magento: the American spelling.
	{"CANCELED", "CANCELLED"},
	// Magento: the gateway flagged the payment for review; it is not yet
	// confirmed, and the order stands until the shop decides: it counts.
	{"PAYMENT_REVIEW", "PENDING_PAYMENT"},
	// WooCommerce: its final status.
	{"COMPLETED", "COMPLETE"},
	// WooCommerce: awaiting payment.
	{"PENDING", "PENDING_PAYMENT"},
	// WooCommerce: awaiting the shop's action, as Magento's holded.
	{"ON_HOLD", "HOLDED"},
	// WooCommerce: refunded in full. Magento's CLOSED is a refunded order
	// too, left out of statistics and revenue.
	{"REFUNDED", "CLOSED"},
	// WooCommerce: the payment failed or was declined: no sale.
	{"FAILED", "CANCELLED"},
	// WooCommerce's block checkout creates the order as a draft when the
	// shopper reaches the checkout, before it is placed, and deletes it
	// after a day or so if it never is, without the plugin sending
	// anything. Read as NEW, every abandoned checkout would count as a
	// sale for ever (WooCommerce's own analytics leave drafts out). A
	// draft that is placed is sent again with its new status, which
	// counts from then on.
	{"CHECKOUT_DRAFT", "CANCELLED"},
}

// reasonState lists what sale_state accepts. It names the aliases too, so
// that an integrator reading a rejection sees that a platform's spelling
// would have done.
var reasonState = func() string {
	aliases := make([]string, len(stateAliases))
	for i, a := range stateAliases {
		aliases[i] = a.alias
	}
	return "must be one of " + strings.Join(States, ", ") +
		" (or, read as one of them: " + strings.Join(aliases, ", ") + "), in any case, with - or a space for _"
}()

// state reads sale_state: one of States or of stateAliases, in any case
// and with "-" or a space for "_" ("on-hold", "Payment Review"), as the
// state of States it stands for. Anything else is refused: a state read
// wrongly would count a sale that is none, or lose one.
func state(v any) (any, string) {
	s, ok := v.(string)
	if !ok {
		return nil, reasonState
	}
	key := strings.ToUpper(strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return '_'
		}
		return r
	}, strings.TrimSpace(s)))
	if slices.Contains(States, key) {
		return key, ""
	}
	for _, a := range stateAliases {
		if a.alias == key {
			return a.state, ""
		}
	}
	return nil, reasonState
}
