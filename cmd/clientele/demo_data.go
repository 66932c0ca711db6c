package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// demoSet is the data `serve --demo --demo-data` loads into the demo
// company: the records of each upload, in the order they are imported
// (customers and products before the events and sales that name them),
// the campaign whose activity the events carry, and the figures its
// statistics must show once everything is imported. newDemoSet makes it.
type demoSet struct {
	Customers, Products, Events, Sales []map[string]any
	Campaign                           demoCampaign
	Figures                            demoFigures
}

// demoCampaign is the demo's email campaign, active since ActivatedAt.
type demoCampaign struct {
	Key, Name, UTMCampaign string
	ActivatedAt            time.Time
	ProductIDs             []string
}

// demoFigures are the campaign's statistics as docs/campaigns.md
// (Statistics) defines them, worked out from the generated records.
type demoFigures struct {
	AudienceSize, AudienceWithEvents, AudienceUnreachable              int
	Sent, Delivered, Opens, Clicks, Unsubscribes, SpamReports, Bounces int
	// Conversions are the counted sales in the window by audience members
	// whose first open or click came strictly before; Revenue their totals.
	Conversions int
	Revenue     int64
}

// The sizes of the demo set.
const (
	demoCustomers = 300
	demoBrowses   = 2400
	demoSales     = 380
	// demoSeed makes the set the same on every machine: only its dates
	// move, all by the same amount, with the day it is generated.
	demoSeed = 20260601
)

// demoWindow is how long a campaign's sales count after its activation
// (docs/campaigns.md: 720 hours, both ends included).
const demoWindow = 30 * 24 * time.Hour

type demoProduct struct {
	title    string
	category string
	brand    string
	price    int64
}

// demoProducts are the shop's products, ten in each of four categories.
var demoProducts = []demoProduct{
	{"Tumma paahto 500 g", "Kahvi", "Paahtimo Aalto", 899},
	{"Vaalea paahto 500 g", "Kahvi", "Paahtimo Aalto", 849},
	{"Espressopavut 1 kg", "Kahvi", "Paahtimo Aalto", 2290},
	{"Luomukahvi 400 g", "Kahvi", "Saariston Paahtimo", 749},
	{"Kofeiiniton kahvi 400 g", "Kahvi", "Saariston Paahtimo", 799},
	{"Suodatinpaperit 100 kpl", "Kahvi", "Saariston Paahtimo", 299},
	{"Käsikäyttöinen kahvimylly", "Kahvi", "Kotiväline", 4990},
	{"Pressopannu 1 l", "Kahvi", "Kotiväline", 3490},
	{"Maitovaahdotin", "Kahvi", "Kotiväline", 2990},
	{"Kahvikuppi 2 kpl", "Kahvi", "Savi & Lasi", 2490},
	{"Valurautapannu 26 cm", "Keittiö", "Kotiväline", 5990},
	{"Koivuinen leikkuulauta", "Keittiö", "Puuseppä Lind", 3290},
	{"Kokkiveitsi 20 cm", "Keittiö", "Terä", 7990},
	{"Teräskattila 3 l", "Keittiö", "Kotiväline", 4490},
	{"Keittiöpyyhe 2 kpl", "Keittiö", "Pellava Oy", 1490},
	{"Salaattikulho", "Keittiö", "Savi & Lasi", 2990},
	{"Kaulin", "Keittiö", "Puuseppä Lind", 1990},
	{"Kahvipannu 1,5 l", "Keittiö", "Kotiväline", 3990},
	{"Öljypullo", "Keittiö", "Savi & Lasi", 1290},
	{"Muffinssivuoka", "Keittiö", "Kotiväline", 1690},
	{"Villahuopa", "Sisustus", "Pellava Oy", 8990},
	{"Pellavainen tyynynpäällinen", "Sisustus", "Pellava Oy", 2490},
	{"Kynttilä 3 kpl", "Sisustus", "Valo", 1290},
	{"Lyhty", "Sisustus", "Valo", 3990},
	{"Maljakko", "Sisustus", "Savi & Lasi", 4490},
	{"Puinen tarjotin", "Sisustus", "Puuseppä Lind", 2990},
	{"Juliste Saaristo 50 x 70", "Sisustus", "Kuvapaja", 3490},
	{"Lampaantalja", "Sisustus", "Pellava Oy", 9990},
	{"Tuikkukuppi 4 kpl", "Sisustus", "Valo", 1990},
	{"Ovimatto", "Sisustus", "Pellava Oy", 3990},
	{"Termospullo 0,75 l", "Ulkoilu", "Erä", 2990},
	{"Retkikeitin", "Ulkoilu", "Erä", 4990},
	{"Makuupussi", "Ulkoilu", "Erä", 12990},
	{"Otsalamppu", "Ulkoilu", "Valo", 3490},
	{"Villasukat", "Ulkoilu", "Pellava Oy", 1990},
	{"Kuksa", "Ulkoilu", "Puuseppä Lind", 3990},
	{"Sadetakki", "Ulkoilu", "Erä", 8990},
	{"Istuinalusta", "Ulkoilu", "Erä", 990},
	{"Retkituoli", "Ulkoilu", "Erä", 4990},
	{"Puukko", "Ulkoilu", "Terä", 5990},
}

var (
	demoWomen = []string{"Aino", "Anna", "Elina", "Emilia", "Hanna", "Helmi", "Ida", "Johanna", "Katja", "Laura",
		"Leena", "Liisa", "Maria", "Marjatta", "Minna", "Noora", "Päivi", "Riikka", "Sanna", "Satu", "Tiina", "Tuula", "Venla", "Eila"}
	demoMen = []string{"Antti", "Eero", "Hannu", "Heikki", "Jari", "Juha", "Jukka", "Kalle", "Lauri", "Markku",
		"Matti", "Mikko", "Niko", "Olli", "Pekka", "Sami", "Teemu", "Timo", "Tuomas", "Ville", "Väinö", "Jyrki"}
	demoLastNames = []string{"Virtanen", "Korhonen", "Mäkinen", "Nieminen", "Mäkelä", "Hämäläinen", "Laine", "Heikkinen",
		"Koskinen", "Järvinen", "Lehtonen", "Lehtinen", "Saarinen", "Salminen", "Heinonen", "Niemi", "Heikkilä",
		"Kinnunen", "Salonen", "Turunen", "Salo", "Laitinen", "Tuominen", "Rantanen", "Karjalainen", "Jokinen",
		"Mattila", "Savolainen", "Lahtinen", "Ahonen", "Ääkkönen", "Östman"}
	demoDomains = []string{"example.fi", "example.com", "example.net", "example.org"}
	// demoCities are cities with the first digits of their postal codes.
	demoCities = []struct{ name, zip string }{
		{"Helsinki", "00"}, {"Espoo", "02"}, {"Tampere", "33"}, {"Vantaa", "01"}, {"Oulu", "90"},
		{"Turku", "20"}, {"Jyväskylä", "40"}, {"Lahti", "15"}, {"Kuopio", "70"}, {"Pori", "28"},
		{"Joensuu", "80"}, {"Lappeenranta", "53"}, {"Hämeenlinna", "13"}, {"Vaasa", "65"}, {"Rovaniemi", "96"},
	}
	demoStreets = []string{"Mannerheimintie", "Hämeenkatu", "Kauppakatu", "Koulukatu", "Rantatie", "Kirkkokatu",
		"Puistokatu", "Koivukuja", "Mäntytie", "Satamakatu", "Asemakatu", "Myllytie"}
	demoTags = []string{"kanta-asiakas", "vip", "yritysasiakas", "kahviklubi", "retkeilijä"}
	// Mobile prefixes of Finnish operators (+358 4x and 50).
	demoMobile = []string{"40", "41", "44", "45", "46", "50"}
)

// demoDate formats t as imports take it: UTC, to the second, with Z.
func demoDate(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// asciiFold turns a Finnish name into the letters of an email address.
func asciiFold(s string) string {
	return strings.NewReplacer("ä", "a", "ö", "o", "å", "a", "Ä", "a", "Ö", "o", "Å", "a").Replace(strings.ToLower(s))
}

// slugOf turns a product title into a path segment.
func slugOf(s string) string {
	var b strings.Builder
	for _, r := range asciiFold(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// demoCustomer is what the generator remembers of a customer.
type demoCustomer struct {
	id       string
	canEmail bool
	weight   int // how often they browse and buy
}

// newDemoSet generates the demo set: a month of a small Finnish shop
// ending at now. It is deterministic (a seeded generator): two sets
// generated at different times differ only in their dates, all shifted
// by the same amount, so their figures are the same.
func newDemoSet(now time.Time) demoSet {
	r := rand.New(rand.NewPCG(demoSeed, 0x636c69656e74656c))
	now = now.UTC().Truncate(time.Second)
	start := now.Add(-demoWindow)
	at := func(from, to time.Time) time.Time {
		return from.Add(time.Duration(r.Int64N(int64(to.Sub(from)/time.Second))) * time.Second)
	}
	var set demoSet

	// Customers.
	customers := make([]demoCustomer, demoCustomers)
	emails := map[string]bool{}
	var pool []int // customer indexes, repeated by weight
	for i := range customers {
		first := demoWomen[r.IntN(len(demoWomen))]
		if r.IntN(2) == 0 {
			first = demoMen[r.IntN(len(demoMen))]
		}
		last := demoLastNames[r.IntN(len(demoLastNames))]
		email := ""
		for n := 1; email == "" || emails[email]; n++ {
			local := asciiFold(first) + "." + asciiFold(last)
			if n > 1 {
				local += fmt.Sprint(n)
			}
			email = local + "@" + demoDomains[r.IntN(len(demoDomains))]
		}
		emails[email] = true
		city := demoCities[r.IntN(len(demoCities))]
		if r.IntN(2) == 0 { // half live in the four largest
			city = demoCities[r.IntN(4)]
		}
		c := demoCustomer{id: fmt.Sprintf("C-%05d", 10001+i), canEmail: r.IntN(4) > 0, weight: 1 + r.IntN(3)*r.IntN(3)}
		customers[i] = c
		for range c.weight {
			pool = append(pool, i)
		}
		rec := map[string]any{
			"external_id":    c.id,
			"first_name":     first,
			"last_name":      last,
			"email":          email,
			"street_address": fmt.Sprintf("%s %d", demoStreets[r.IntN(len(demoStreets))], 1+r.IntN(60)),
			"zip_code":       fmt.Sprintf("%s%03d", city.zip, 10*r.IntN(90)+100),
			"city":           city.name,
			"country":        "FI",
			"language":       []string{"fi", "fi", "fi", "fi", "fi", "fi", "fi", "sv", "sv", "en"}[r.IntN(10)],
			"birth_date":     time.Date(1950+r.IntN(55), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC).Format(time.DateOnly),
			"can_email":      c.canEmail,
			"can_sms":        r.IntN(5) < 2,
			"can_post":       r.IntN(10) < 3,
			"can_profile":    r.IntN(10) < 6,
		}
		// Most joined years ago; one in eight within the month.
		joined := now.Add(-time.Duration(31+r.IntN(3*365)) * 24 * time.Hour).Add(-time.Duration(r.IntN(86400)) * time.Second)
		if r.IntN(8) == 0 {
			joined = at(start, now)
		}
		rec["date_joined"] = demoDate(joined)
		if r.IntN(100) < 85 {
			rec["phone_number"] = fmt.Sprintf("+358%s%07d", demoMobile[r.IntN(len(demoMobile))], 1000000+r.IntN(9000000))
		}
		if c.canEmail {
			lists := []string{"uutiskirje"}
			if r.IntN(5) < 2 {
				lists = append(lists, "tarjoukset")
			}
			rec["mailing_lists"] = lists
		}
		var tags []string
		for _, t := range demoTags {
			if r.IntN(6) == 0 {
				tags = append(tags, t)
			}
		}
		if tags != nil {
			rec["tags"] = tags
		}
		set.Customers = append(set.Customers, rec)
	}
	customer := func() demoCustomer { return customers[pool[r.IntN(len(pool))]] }

	// Products.
	productIDs := make([]string, len(demoProducts))
	for i, p := range demoProducts {
		productIDs[i] = fmt.Sprintf("P-%d", 1001+i)
		set.Products = append(set.Products, map[string]any{
			"external_id": productIDs[i],
			"sku":         fmt.Sprintf("%s-%03d", strings.ToUpper(asciiFold(p.category)[:3]), i+1),
			"title":       p.title,
			"category":    p.category,
			"brand":       p.brand,
			"price":       p.price,
			"currency":    "EUR",
			"url":         "https://kauppa.example.fi/tuotteet/" + slugOf(p.title),
			"in_stock":    r.IntN(10) > 0,
		})
	}
	product := func() int { return r.IntN(len(demoProducts)) }

	// The campaign: an email to every customer who may be emailed, three
	// weeks ago, featuring the coffee.
	set.Campaign = demoCampaign{
		Key: "KEVAT-KAHVI", Name: "Kevään kahvikampanja", UTMCampaign: "kevat-kahvi",
		ActivatedAt: now.Add(-21 * 24 * time.Hour),
		ProductIDs:  productIDs[:10],
	}
	act := set.Campaign.ActivatedAt
	event := func(typ string, c demoCustomer, t time.Time, fields map[string]any) {
		if fields == nil {
			fields = map[string]any{}
		}
		fields["type"], fields["customer_id"], fields["date"] = typ, c.id, demoDate(t)
		set.Events = append(set.Events, fields)
	}
	campaignEvent := func(typ string, c demoCustomer, t time.Time) {
		event(typ, c, t, map[string]any{"campaign_key": set.Campaign.Key, "utm_campaign": set.Campaign.UTMCampaign})
	}
	f := &set.Figures
	firstReaction := map[string]time.Time{}
	var clickers []demoCustomer
	for _, c := range customers {
		if !c.canEmail {
			continue
		}
		sent := act.Add(time.Duration(r.IntN(3600)) * time.Second)
		campaignEvent("MAIL_SENT", c, sent)
		f.AudienceSize++
		f.Sent++
		if r.IntN(25) == 0 {
			campaignEvent("MAIL_BOUNCE", c, sent.Add(time.Minute))
			f.Bounces++
			f.AudienceUnreachable++
			continue
		}
		delivered := sent.Add(time.Minute)
		campaignEvent("MAIL_DELIVERED", c, delivered)
		f.Delivered++
		if r.IntN(50) == 0 {
			campaignEvent("MAIL_UNSUBSCRIBE", c, delivered.Add(time.Duration(1+r.IntN(48))*time.Hour))
			f.Unsubscribes++
			continue
		}
		if r.IntN(100) == 0 {
			campaignEvent("MAIL_SPAM_REPORT", c, delivered.Add(time.Duration(1+r.IntN(48))*time.Hour))
			f.SpamReports++
			continue
		}
		if r.IntN(10) >= 3 { // three in ten open it
			continue
		}
		opened := delivered.Add(time.Duration(300+r.IntN(48*3600)) * time.Second)
		firstReaction[c.id] = opened
		f.AudienceWithEvents++
		campaignEvent("MAIL_OPEN", c, opened)
		f.Opens++
		if r.IntN(4) == 0 { // opened again
			campaignEvent("MAIL_OPEN", c, opened.Add(time.Duration(1+r.IntN(72))*time.Hour))
			f.Opens++
		}
		if r.IntN(5) < 2 {
			clicked := opened.Add(time.Duration(10+r.IntN(600)) * time.Second)
			campaignEvent("MAIL_CLICK", c, clicked)
			f.Clicks++
			clickers = append(clickers, c)
			event("BROWSE", c, clicked.Add(5*time.Second), map[string]any{
				"product_id": productIDs[r.IntN(10)], "utm_campaign": set.Campaign.UTMCampaign,
				"utm_source": "newsletter", "utm_medium": "email",
			})
		}
	}

	// Browsing, and some of it into the basket.
	for range demoBrowses {
		c, p, t := customer(), product(), at(start, now)
		event("BROWSE", c, t, map[string]any{
			"product_id": productIDs[p], "path": "/tuotteet/" + slugOf(demoProducts[p].title),
		})
		if r.IntN(5) == 0 && t.Add(20*time.Minute).Before(now) {
			event("BASKET_ADD", c, t.Add(time.Duration(30+r.IntN(1200))*time.Second), map[string]any{"product_id": productIDs[p]})
		}
	}

	// Sales: the month's orders, and those of clickers who bought what
	// the campaign showed them.
	type demoSale struct {
		c     demoCustomer
		t     time.Time
		first int // a product of the sale, -1 for any
	}
	var sales []demoSale
	for range demoSales {
		sales = append(sales, demoSale{customer(), at(start, now), -1})
	}
	for _, c := range clickers {
		if r.IntN(20) < 9 {
			t := firstReaction[c.id].Add(time.Duration(2*3600+r.IntN(4*86400)) * time.Second)
			sales = append(sales, demoSale{c, t, r.IntN(10)})
		}
	}
	slices.SortStableFunc(sales, func(a, b demoSale) int { return a.t.Compare(b.t) })
	methods := []string{"verkkopankki", "kortti", "MobilePay", "lasku"}
	for i, s := range sales {
		id := fmt.Sprintf("T-%06d", 500001+i)
		state := "COMPLETE"
		switch {
		case r.IntN(30) == 0:
			state = "CANCELLED"
		case now.Sub(s.t) < 48*time.Hour:
			state = "PROCESSING"
		}
		var rows []map[string]any
		var total int64
		first := s.first
		for range 1 + r.IntN(3) {
			p := first
			if p < 0 {
				p = product()
			}
			first = -1
			q := int64(1 + r.IntN(2)*r.IntN(3))
			rows = append(rows, map[string]any{"product_id": productIDs[p], "quantity": q, "unit_price": demoProducts[p].price})
			total += q * demoProducts[p].price
		}
		set.Sales = append(set.Sales, map[string]any{
			"sale_external_id":     id,
			"sale_date":            demoDate(s.t),
			"sale_customer_id":     s.c.id,
			"sale_currency":        "EUR",
			"sale_state":           state,
			"sale_payment_method":  methods[r.IntN(len(methods))],
			"sale_shipping_method": []string{"Posti", "Matkahuolto", "nouto myymälästä"}[r.IntN(3)],
			"sale_rows":            rows,
		})
		reaction, reacted := firstReaction[s.c.id]
		if state != "CANCELLED" && reacted && reaction.Before(s.t) && !s.t.Before(act) && !s.t.After(act.Add(demoWindow)) {
			f.Conversions++
			f.Revenue += total
		}
		if shipped := s.t.Add(time.Duration(20+r.IntN(30)) * time.Hour); state == "COMPLETE" && shipped.Before(now) {
			event("ORDER_SHIPPED", s.c, shipped, map[string]any{"sale_id": id, "tracking_number": fmt.Sprintf("JJFI%010d", r.IntN(1e9))})
			if r.IntN(6) == 0 && shipped.Add(72*time.Hour).Before(now) {
				event("SENTIMENT", s.c, shipped.Add(72*time.Hour), map[string]any{"sentiment_value": 5 + r.IntN(6), "sale_id": id})
			}
		}
	}
	slices.SortStableFunc(set.Events, func(a, b map[string]any) int {
		return strings.Compare(a["date"].(string), b["date"].(string))
	})
	return set
}
