package main

import "fmt"

// generator returns record i of a deterministic data set as JSON.
type generator func(i int) []byte

var generators = map[string]generator{
	"customers": customer,
	"events":    activity,
	"sales":     saleRow,
}

// prerequisites are, by entity, the records to import before the timed
// run (not counted): events refer to existing customers.
var prerequisites = map[string]struct {
	entity string
	n      func(n int) int
}{
	"events": {"customers", eventCustomers},
}

var (
	firstNames = []string{"Aino", "Eino", "Helmi", "Oiva", "Siiri", "Väinö", "Ella", "Leo", "Aada", "Onni"}
	lastNames  = []string{"Korhonen", "Virtanen", "Mäkinen", "Nieminen", "Mäkelä", "Hämäläinen", "Laine", "Heikkinen"}
	cities     = []string{"Helsinki", "Espoo", "Tampere", "Vantaa", "Oulu", "Turku", "Jyväskylä", "Lahti"}
)

// customer is a realistic customer record of about 300 bytes.
func customer(i int) []byte {
	return fmt.Appendf(nil, `{"external_id":"c-%d","email":"customer%d@example.com","phone_number":"+35840%07d",`+
		`"first_name":%q,"last_name":%q,"street_address":"Mannerheimintie %d","zip_code":"%05d","city":%q,`+
		`"country":"FI","language":"fi","can_email":%t,"can_sms":%t,"date_joined":"2024-%02d-%02dT10:%02d:00Z",`+
		`"tags":["loyalty","segment-%d"],"mailing_lists":["newsletter"]}`,
		i, i, i%10_000_000, firstNames[i%len(firstNames)], lastNames[i%len(lastNames)], i%200+1, i%100000,
		cities[i%len(cities)], i%2 == 0, i%3 == 0, i%12+1, i%28+1, i%60, i%7)
}

// products is the size of the catalogue events and sales refer to; the
// first reference to a product creates it.
const products = 1000

// eventCustomers is the number of customers n events are spread over.
func eventCustomers(n int) int { return max(1, min(100_000, n/10)) }

// activity is event i of a mix of types, about 200 bytes, for one of the
// customers the prerequisites import; a product's first event creates it.
func activity(i int) []byte {
	c := i % eventCustomers(benchN)
	date := fmt.Sprintf("2025-%02d-%02dT%02d:%02d:00Z", i%12+1, i%28+1, i%24, i%60)
	switch i % 5 {
	case 0, 1:
		return fmt.Appendf(nil, `{"type":"BROWSE","date":%q,"customer_id":"c-%d","product_id":"p-%d","path":"/products/p-%d","utm_source":"newsletter","title":"Product %d","price":%d}`,
			date, c, i%products, i%products, i%products, 100+i%products*10)
	case 2:
		return fmt.Appendf(nil, `{"type":"BASKET_ADD","date":%q,"customer_id":"c-%d","product_id":"p-%d","title":"Product %d","price":%d,"source":"web"}`,
			date, c, i%products, i%products, 100+i%products*10)
	case 3:
		return fmt.Appendf(nil, `{"type":"SENTIMENT","date":%q,"customer_id":"c-%d","sentiment_value":%d,"reason":"survey","tags":["nps"]}`,
			date, c, i%11)
	}
	return fmt.Appendf(nil, `{"type":"ORDER_SHIPPED","date":%q,"customer_id":"c-%d","tracking_number":"TRK%09d","sale_id":"s-%d"}`,
		date, c, i, i/10)
}

// rowsPerSale is the number of flat rows of a generated transaction.
const rowsPerSale = 10

// saleRow is flat row i of the transactions of rowsPerSale rows, about
// 150 bytes; the transaction's sale_* fields (about 250 bytes more) are on
// its first row. Transactions are spread over 100,000 customers.
func saleRow(i int) []byte {
	s, r := i/rowsPerSale, i%rowsPerSale
	row := fmt.Appendf(nil, `{"sale_external_id":"s-%d","external_id":"s-%d-%d","product_id":"p-%d","quantity":%d,"unit_price":%d,"discount":%d`,
		s, s, r, (s*7+r)%products, r%3+1, 100+(s+r)%products*10, r%2*50)
	if r == 0 {
		c := s % 100_000
		row = fmt.Appendf(row, `,"sale_date":"2025-%02d-%02dT%02d:%02d:00","sale_email":"customer%d@example.com","sale_first_name":%q,"sale_last_name":%q,`+
			`"sale_city":%q,"sale_customer_can_email":%t,"sale_payment_method":"card","sale_shipping":490,"sale_shop_id":"shop-%d"`,
			s%12+1, s%28+1, s%24, s%60, c, firstNames[c%len(firstNames)], lastNames[c%len(lastNames)], cities[c%len(cities)], c%2 == 0, s%5)
	}
	return append(row, '}')
}

// benchN is the number of records of the run, which spreads generated
// events over its customers.
var benchN = 1
