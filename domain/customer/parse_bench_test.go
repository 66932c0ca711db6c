package customer_test

import (
	"fmt"
	"testing"

	"github.com/clientele/clientele/domain/customer"
)

// benchRecords are n records as the load driver's customer import sends
// them (cmd/clientele-load/generate.go), 300 to 380 bytes each.
func benchRecords(n int) [][]byte {
	firstNames := []string{"Aino", "Eino", "Helmi", "Oiva", "Siiri", "Väinö", "Ella", "Leo", "Aada", "Onni"}
	lastNames := []string{"Korhonen", "Virtanen", "Mäkinen", "Nieminen", "Mäkelä", "Hämäläinen", "Laine", "Heikkinen"}
	cities := []string{"Helsinki", "Espoo", "Tampere", "Vantaa", "Oulu", "Turku", "Jyväskylä", "Lahti"}
	records := make([][]byte, n)
	for i := range records {
		records[i] = fmt.Appendf(nil, `{"external_id":"c-%d","email":"customer%d@example.com","phone_number":"+35840%07d",`+
			`"first_name":%q,"last_name":%q,"street_address":"Mannerheimintie %d","zip_code":"%05d","city":%q,`+
			`"country":"FI","language":"fi","can_email":%t,"can_sms":%t,"date_joined":"2024-%02d-%02dT10:%02d:00Z",`+
			`"tags":["loyalty","segment-%d"],"mailing_lists":["newsletter"]}`,
			i, i, i%10_000_000, firstNames[i%len(firstNames)], lastNames[i%len(lastNames)], i%200+1, i%100000,
			cities[i%len(cities)], i%2 == 0, i%3 == 0, i%12+1, i%28+1, i%60, i%7)
	}
	return records
}

// BenchmarkParse parses 1,000 typical records per op, as an import does.
func BenchmarkParse(b *testing.B) {
	p := customer.NewParser(acme)
	records := benchRecords(1000)
	b.ReportAllocs()
	for b.Loop() {
		for _, raw := range records {
			if _, err := p.Parse(raw); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkParseCSV parses a CSV-style record (every value a string) with
// a company field and a naive datetime.
func BenchmarkParseCSV(b *testing.B) {
	p := customer.NewParser(acme)
	raw := []byte(`{"external_id": "B-1", "email": "person.1@example.com", "phone_number": "+358400000001",` +
		` "first_name": "First", "last_name": "Last", "city": "Helsinki", "country": "fi", "language": "fi",` +
		` "tags": ["vip", "b1"], "can_email": "true", "date_joined": "2024-05-01 10:00:00", "ACME__tier": "gold"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}
