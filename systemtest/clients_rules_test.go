package systemtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
)

// The rules that let shop plugins' payloads in unchanged (docs/clients.md),
// through HTTP: blank customer fields of sales and events, sale_state
// spellings, email addresses as customer ids, national phone numbers.

// TestSalesBlankPhoneKeepsTheCustomers: WooCommerce sends
// "sale_phone_number": "" for an order placed without a phone. In a
// sale's customer part a blank is not given: the customer keeps the phone
// number, which still finds them, and the sale itself has none. The same
// holds for an event's customer fields.
func TestSalesBlankPhoneKeepsTheCustomers(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/customers/upload/", `[{"external_id": "17", "email": "elina@x.com", "phone_number": "+358 50 765 4321", "city": "Tampere"}]`)
	got := e.importAll(token, "/api/sales/upload/", `{"sales": [
		{"external_id": "96", "sale_external_id": "1049", "sale_date": "2026-01-12T11:02:45+00:00", "sale_customer_id": "17",
		 "sale_phone_number": "", "sale_email": "elina@x.com", "sale_city": "", "product_id": 501, "quantity": 1, "unit_price": 1450}
	]}`)
	if len(got) != 0 {
		t.Fatalf("rejections %v", got)
	}
	got = e.importAll(token, "/api/events/upload/", `[{"type": "BROWSE", "date": "2026-01-12", "customer_id": "17", "phone_number": "", "city": "", "label": "x"}]`)
	if len(got) != 0 {
		t.Fatalf("event rejections %v", got)
	}
	c := byKey(e.retrieveAll(token, "customers").Items, "external_id")["17"]
	if c["phone_number"] != "+358507654321" || c["city"] != "Tampere" {
		t.Errorf("customer after the sale and the event: %v, want the phone number and city kept", c)
	}
	found := e.retrieveAll(token, "customers", withQuery("phone_number", "+358507654321")).Items
	if len(found) != 1 || found[0]["external_id"] != "17" {
		t.Errorf("the phone number finds %v, want customer 17", found)
	}
	// A later order naming only the phone number is the same customer's.
	if got := e.importAll(token, "/api/sales/upload/", `[{"sale_external_id": "1050", "sale_date": "2026-01-13", "sale_phone_number": "+358 50 765 4321",
		"product_id": 501, "quantity": 1, "unit_price": 1450}]`); len(got) != 0 {
		t.Fatalf("rejections %v", got)
	}
	if s := salesByID(e.retrieveAll(token, "sales").Items)["1049"]; s["sale_phone_number"] != nil || s["sale_city"] != nil {
		t.Errorf("sale 1049: %v, want no phone number or city of its own", s)
	}
	for _, id := range []string{"1049", "1050"} {
		if owner := e.saleCustomer(t, id); owner != c["id"] {
			t.Errorf("sale %s belongs to %s, want customer 17, %v", id, owner, c["id"])
		}
	}
}

// saleCustomer returns the id of the customer a sale of acme belongs to
// (retrieval does not show it).
func (e *env) saleCustomer(t *testing.T, saleExternalID string) string {
	t.Helper()
	var id string
	if err := e.pool.QueryRow(t.Context(), `SELECT customer_id FROM sales WHERE company_id = $1 AND doc->>'sale_external_id' = $2`,
		e.acme.ID, saleExternalID).Scan(&id); err != nil {
		t.Fatalf("sale %s: %v", saleExternalID, err)
	}
	return id
}

// TestSalesStateAliases: Magento's and WooCommerce's spellings of
// sale_state are stored as the interface state they mean, are retrieved
// and filtered as that state, and count in revenue as it does (CANCELLED
// and CLOSED do not). Anything else is refused, naming sale_state, with
// the accepted values in the reason.
func TestSalesStateAliases(t *testing.T) {
	e, token := eventsEnv(t)
	states := []struct{ sent, want string }{
		{"CANCELED", "CANCELLED"}, {"PAYMENT_REVIEW", "PENDING_PAYMENT"}, {"COMPLETED", "COMPLETE"}, {"PENDING", "PENDING_PAYMENT"},
		{"ON-HOLD", "HOLDED"}, {"REFUNDED", "CLOSED"}, {"FAILED", "CANCELLED"}, {"CHECKOUT-DRAFT", "CANCELLED"}, {"processing", "PROCESSING"},
	}
	var records []string
	for i, s := range states {
		records = append(records, `{"sale_external_id": "S`+string(rune('0'+i))+`", "sale_date": "2026-01-05", "sale_email": "a@x.com", "sale_state": "`+
			s.sent+`", "product_id": "P", "quantity": 1, "unit_price": 100}`)
	}
	records = append(records, `{"sale_external_id": "BAD", "sale_date": "2026-01-05", "sale_email": "a@x.com", "sale_state": "SHIPPED", "product_id": "P", "quantity": 1, "unit_price": 100}`)
	run := e.mustUpload(token, "/api/sales/upload/", rawBody("["+strings.Join(records, ",")+"]"))
	a, _ := e.waitRun(token, run)
	e.waitProjections()
	if r := a.Import.Rejections; len(r) != 1 || r[0].Index != len(states) || r[0].Field == nil || *r[0].Field != "sale_state" ||
		!strings.Contains(r[0].Reason, "PENDING_PAYMENT") || !strings.Contains(r[0].Reason, "CHECKOUT_DRAFT") {
		t.Fatalf("rejections %+v, want only the SHIPPED sale's, naming sale_state and listing the accepted values", r)
	}
	sales := salesByID(e.retrieveAll(token, "sales").Items)
	for i, s := range states {
		if got := sales["S"+string(rune('0'+i))]["sale_state"]; got != s.want {
			t.Errorf("sale_state %s retrieved as %v, want %s", s.sent, got, s.want)
		}
	}
	if n := len(e.retrieveAll(token, "sales", withQuery("sale_state", "CANCELLED")).Items); n != 3 {
		t.Errorf("?sale_state=CANCELLED finds %d sales, want 3 (CANCELED, FAILED, CHECKOUT-DRAFT)", n)
	}
	var counted int64
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE counted) FROM sales WHERE company_id = $1`, e.acme.ID).Scan(&counted); err != nil {
		t.Fatal(err)
	}
	if counted != 5 {
		t.Errorf("%d sales counted, want 5: all but the cancelled, failed, draft and refunded", counted)
	}
}

// TestGuestsEmailAsExternalID: WooCommerce exports a guest as a customer
// whose external_id is the billing email. An email address is no
// external_id: the record is a guest's, found (or created) by its email,
// and the address is its email when it has none; the same for a sale's
// sale_customer_id and an event's customer_id. Any other invalid
// external_id is still refused.
func TestGuestsEmailAsExternalID(t *testing.T) {
	e, token := eventsEnv(t)
	if got := e.importAll(token, "/api/sales/upload/", `[{"sale_external_id": "1044", "sale_date": "2026-01-09", "sale_customer_id": "Sanna.Guest@example.com",
		"product_id": "501", "quantity": 1, "unit_price": 1290}]`); len(got) != 0 {
		t.Fatalf("sale rejections %v", got)
	}
	got := e.importAll(token, "/api/customers/upload/", `{"customers": [
		{"external_id": "sanna.guest@example.com", "first_name": "Sanna", "email": "sanna.guest@example.com", "city": "Jyväskylä"},
		{"external_id": "Teemu.Guest@example.com", "first_name": "Teemu"},
		{"external_id": "not an id", "email": "x@example.com"}
	]}`)
	if diff := cmp.Diff([]rejection{{2, "external_id"}}, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}
	if got := e.importAll(token, "/api/events/upload/", `[{"type": "MAIL_SUBSCRIBE", "date": "2026-01-10", "customer_id": "teemu.guest@example.com"}]`); len(got) != 0 {
		t.Fatalf("event rejections %v", got)
	}
	customers := e.retrieveAll(token, "customers").Items
	if len(customers) != 2 {
		t.Fatalf("%d customers, want one per guest: %v", len(customers), customers)
	}
	byEmail := byKey(customers, "email")
	sanna, teemu := byEmail["sanna.guest@example.com"], byEmail["teemu.guest@example.com"]
	if sanna == nil || sanna["first_name"] != "Sanna" || sanna["city"] != "Jyväskylä" || sanna["external_id"] != nil {
		t.Errorf("Sanna: %v, want the guest of sale 1044 with her name and no external_id", sanna)
	}
	if teemu == nil || teemu["first_name"] != "Teemu" || teemu["can_email"] != true || teemu["external_id"] != nil {
		t.Errorf("Teemu: %v, want the address as his email, subscribed, and no external_id", teemu)
	}
	s := salesByID(e.retrieveAll(token, "sales").Items)["1044"]
	if s["sale_email"] != "sanna.guest@example.com" || s["sale_customer_id"] != nil || e.saleCustomer(t, "1044") != sanna["id"] {
		t.Errorf("sale 1044: %v, want Sanna's, with her email and no sale_customer_id", s)
	}
	ev := e.retrieveAll(token, "events").Items
	if len(ev) != 1 || ev[0]["email"] != "teemu.guest@example.com" || ev[0]["customer_id"] != nil {
		t.Errorf("events %v, want Teemu's subscription with his email and no customer_id", ev)
	}
}

// TestCustomerRulePhoneRegion: a phone number without + is refused while
// neither the record nor the company says whose it is; the record's
// country, or the company's phone_region (`clientele company update
// --phone-region`), makes it an E.164 number, in customers, sales and
// events alike.
func TestCustomerRulePhoneRegion(t *testing.T) {
	e, token := eventsEnv(t)
	got := e.importAll(token, "/api/customers/upload/", `[
		{"external_id": "45", "phone_number": "040 987 6543", "country": "FI"},
		{"external_id": "46", "phone_number": "040 123 4567"}
	]`)
	if diff := cmp.Diff([]rejection{{1, "phone_number"}}, got); diff != "" {
		t.Errorf("without a phone_region (-want +got):\n%s", diff)
	}
	fi := "fi"
	c, err := e.cmds.UpdateCompanySettings.Handle(context.Background(), commands.UpdateCompanySettings{
		Principal: access.System(e.acme.ID), CompanyID: e.acme.ID, Change: company.SettingsChange{PhoneRegion: &fi}})
	if err != nil || c.PhoneRegion != "FI" {
		t.Fatalf("phone_region: %q %v", c.PhoneRegion, err)
	}
	if got := e.importAll(token, "/api/customers/upload/", `[{"external_id": "46", "phone_number": "040 123 4567"}, {"external_id": "47", "phone_number": "040 12"}]`); !cmp.Equal(got, []rejection{{1, "phone_number"}}) {
		t.Errorf("with phone_region FI: rejections %v, want only the invalid number's", got)
	}
	if got := e.importAll(token, "/api/sales/upload/", `[{"sale_external_id": "1048", "sale_date": "2026-01-10", "sale_phone_number": "045 678 9012",
		"sale_email": "veera@x.com", "product_id": "501", "quantity": 1, "unit_price": 1290}]`); len(got) != 0 {
		t.Errorf("sale rejections %v", got)
	}
	if got := e.importAll(token, "/api/events/upload/", `[{"type": "SMS_SUBSCRIBE", "date": "2026-01-10", "phone_number": "070-123 45 67", "country": "SE"}]`); len(got) != 0 {
		t.Errorf("event rejections %v", got)
	}
	byPhone := byKey(e.retrieveAll(token, "customers").Items, "phone_number")
	for phone, want := range map[string]string{"+358409876543": "45", "+358401234567": "46"} {
		if byPhone[phone]["external_id"] != want {
			t.Errorf("%s: %v, want customer %s", phone, byPhone[phone], want)
		}
	}
	if byPhone["+358456789012"]["email"] != "veera@x.com" || byPhone["+46701234567"]["can_sms"] != true {
		t.Errorf("customers of the sale and the event: %v", byPhone)
	}
	if s := salesByID(e.retrieveAll(token, "sales").Items)["1048"]; s["sale_phone_number"] != "+358456789012" {
		t.Errorf("sale 1048: %v", s)
	}
}
