package customer_test

import (
	"fmt"
	"testing"

	"github.com/clientele/clientele/domain/customer"
)

// BenchmarkParse parses a typical record of about 300 bytes.
func BenchmarkParse(b *testing.B) {
	p := customer.NewParser(acme)
	raw := []byte(fmt.Sprintf(`{"external_id": "B-%d", "email": "person.%d@example.com", "phone_number": "+35840%07d",`+
		` "first_name": "First", "last_name": "Last", "city": "Helsinki", "country": "fi", "language": "fi",`+
		` "tags": ["vip", "b1"], "can_email": "true", "date_joined": "2024-05-01 10:00:00", "ACME__tier": "gold"}`, 1, 1, 1))
	for b.Loop() {
		if _, err := p.Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}
