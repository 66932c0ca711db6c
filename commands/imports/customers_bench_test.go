package imports_test

import (
	"fmt"
	"testing"
)

// BenchmarkImportCustomers imports chunks of 1,000 new customers (about
// 300 bytes each), each chunk in its own transaction, as the import
// worker does: parse, resolve, keys, seal, one commit, state written back.
func BenchmarkImportCustomers(b *testing.B) {
	const size = 1000
	e := newCustomerEnv(b)
	chunks := make([][]string, b.N)
	for n := range chunks {
		chunks[n] = make([]string, size)
		for i := range size {
			k := n*size + i
			chunks[n][i] = fmt.Sprintf(`{"external_id": "B-%d", "email": "person.%d@example.com", "phone_number": "+35840%07d",`+
				` "first_name": "First%d", "last_name": "Last%d", "city": "Helsinki", "country": "fi", "language": "fi",`+
				` "tags": ["vip", "b%d"], "can_email": "true", "date_joined": "2024-05-01 10:00:00", "ACME__tier": "gold"}`,
				k, k, k, k, k, k%10)
		}
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if accepted, rej := e.chunk(b, chunks[n]...); accepted != size {
			b.Fatalf("accepted %d, rejections %v", accepted, rej[:min(len(rej), 3)])
		}
	}
	b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "customers/s")
}
