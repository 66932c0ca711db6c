package main

import "fmt"

// generator returns record i of a deterministic data set as JSON.
type generator func(i int) []byte

var generators = map[string]generator{
	"customers": customer,
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
