// Package events generates records shaped like application events, for
// benchmarks and soak tests that need data a real producer would write
// rather than random bytes: JSON order events of about 1 KiB with a key and
// a few headers, whose field variety makes them compress about 3–6× with
// the lz4 and zstd codecs of Kafka producers.
//
// Record i of a generator is a pure function of the generator's seed and i:
// the same seed gives the same bytes on every machine and in every run, and
// records can be generated in any order or concurrently.
package events

import (
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Orders generates order events: a JSON object of 800 to 1350 bytes (mean
// about 1050) with an order ID, a customer, one to four line items, amounts,
// a shipping address, a payment and client details; the key is the customer
// ID ("cust-" and 7 digits, so several orders share a key, as on a
// customer-keyed topic), and four headers: "event-type", "content-type",
// "schema-version" and "trace-id" (32 hex digits). Encoded as Kafka records
// in batches of 1 MB, they compress about 3.3× with lz4 and 4.9× with zstd
// (payload bytes per compressed byte; about 2.9× and 4.2× in 64 KiB
// batches). Create one with NewOrders; the
// zero value is not usable. An Orders is safe for concurrent use: it holds
// no mutable state.
type Orders struct {
	seed uint64
	base time.Time
}

// NewOrders returns the generator of order events for seed. Record i's
// "created_at" field is 2026-01-01T00:00:00Z plus about 3 ms per record
// (with jitter), so consecutive records look like a steady stream.
func NewOrders(seed uint64) *Orders {
	return &Orders{seed: seed, base: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Record returns record i (i >= 0) of the generator: its key, its JSON value
// and its headers, in fresh slices the caller may keep or change.
func (o *Orders) Record(i int64) (key, value []byte, headers []kgo.RecordHeader) {
	// One PCG stream per record: record i does not depend on any other.
	r := rand.New(rand.NewPCG(o.seed, uint64(i)^0x9e3779b97f4a7c15))
	g := gen{r: r, b: make([]byte, 0, 1600)}
	return g.order(o.base, i)
}

// PayloadBytes returns the bytes a record carries for its application:
// len(key) + len(value) + the lengths of every header key and value. It is
// what the benchmarks call the payload of a record (Kafka's per-record and
// per-batch framing is not counted).
func PayloadBytes(key, value []byte, headers []kgo.RecordHeader) int {
	n := len(key) + len(value)
	for _, h := range headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

type gen struct {
	r *rand.Rand
	b []byte
}

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g *gen) hex(n int) string {
	buf := make([]byte, (n+1)/2)
	for i := range buf {
		buf[i] = byte(g.r.Uint32())
	}
	return hex.EncodeToString(buf)[:n]
}

func (g *gen) digits(n int) string {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte('0' + g.r.IntN(10))
	}
	return string(buf)
}

const alnum = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

func (g *gen) code(n int) string {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = alnum[g.r.IntN(len(alnum))]
	}
	return string(buf)
}

// The JSON writers append "key":value pairs; the caller places braces and
// commas with open, sep and close.
func (g *gen) str(k, v string) {
	g.b = append(g.b, '"')
	g.b = append(g.b, k...)
	g.b = append(g.b, `":"`...)
	g.b = append(g.b, v...) // the generated strings hold no character JSON escapes
	g.b = append(g.b, '"')
}

func (g *gen) num(k string, v int64) {
	g.b = append(g.b, '"')
	g.b = append(g.b, k...)
	g.b = append(g.b, `":`...)
	g.b = strconv.AppendInt(g.b, v, 10)
}

// cents writes v/100 with two decimals, as a JSON number.
func (g *gen) cents(k string, v int64) {
	g.b = append(g.b, '"')
	g.b = append(g.b, k...)
	g.b = append(g.b, `":`...)
	g.b = strconv.AppendInt(g.b, v/100, 10)
	g.b = append(g.b, '.')
	if c := v % 100; c < 10 {
		g.b = append(g.b, '0', byte('0'+c))
	} else {
		g.b = strconv.AppendInt(g.b, c, 10)
	}
}

func (g *gen) boolean(k string, v bool) {
	g.b = append(g.b, '"')
	g.b = append(g.b, k...)
	g.b = append(g.b, `":`...)
	g.b = strconv.AppendBool(g.b, v)
}

func (g *gen) key(k string) {
	g.b = append(g.b, '"')
	g.b = append(g.b, k...)
	g.b = append(g.b, `":`...)
}

func (g *gen) c(ch byte) { g.b = append(g.b, ch) }

func (g *gen) order(base time.Time, i int64) (key, value []byte, headers []kgo.RecordHeader) {
	r := g.r
	customer := int64(r.IntN(5_000_000))
	custID := "cust-" + pad7(customer)
	orderID := g.hex(8) + "-" + g.hex(4) + "-4" + g.hex(3) + "-" + g.hex(4) + "-" + g.hex(12)
	created := base.Add(time.Duration(i)*3*time.Millisecond + time.Duration(r.IntN(3000))*time.Microsecond)
	event := g.pick(eventTypes)
	cur := currencies[r.IntN(len(currencies))]
	city := cities[r.IntN(len(cities))]

	g.c('{')
	g.str("order_id", orderID)
	g.c(',')
	g.str("event", event)
	g.c(',')
	g.str("created_at", created.Format("2006-01-02T15:04:05.000Z"))
	g.c(',')
	g.str("status", g.pick(statuses))
	g.c(',')
	g.str("channel", g.pick(channels))
	g.c(',')

	first, last := g.pick(firstNames), g.pick(lastNames)
	g.key("customer")
	g.c('{')
	g.str("id", custID)
	g.c(',')
	g.str("name", first+" "+last)
	g.c(',')
	g.str("email", lower(first)+"."+lower(last)+strconv.Itoa(r.IntN(100))+"@"+g.pick(mailDomains))
	g.c(',')
	g.str("tier", g.pick(tiers))
	g.c('}')
	g.c(',')

	g.key("items")
	g.c('[')
	var subtotal int64
	n := 1 + r.IntN(4)
	for k := 0; k < n; k++ {
		if k > 0 {
			g.c(',')
		}
		p := products[r.IntN(len(products))]
		qty := int64(1 + r.IntN(4))
		price := p.cents + int64(r.IntN(200)) - 100
		subtotal += qty * price
		g.c('{')
		g.str("sku", p.sku+"-"+g.digits(4))
		g.c(',')
		g.str("name", p.name)
		g.c(',')
		g.str("category", p.category)
		g.c(',')
		g.num("quantity", qty)
		g.c(',')
		g.cents("unit_price", price)
		g.c('}')
	}
	g.c(']')
	g.c(',')

	shipping := int64(0)
	if subtotal < 5000 {
		shipping = 499
	}
	tax := subtotal * int64(city.vat) / 100
	g.key("amounts")
	g.c('{')
	g.str("currency", cur)
	g.c(',')
	g.cents("subtotal", subtotal)
	g.c(',')
	g.cents("shipping", shipping)
	g.c(',')
	g.cents("tax", tax)
	g.c(',')
	g.cents("total", subtotal+shipping+tax)
	g.c('}')
	g.c(',')

	g.key("shipping_address")
	g.c('{')
	g.str("street", strconv.Itoa(1+r.IntN(240))+" "+g.pick(streets))
	g.c(',')
	g.str("city", city.name)
	g.c(',')
	g.str("postcode", city.postcodePrefix+g.digits(city.postcodeDigits))
	g.c(',')
	g.str("country", city.country)
	g.c(',')
	g.str("method", g.pick(shipMethods))
	g.c('}')
	g.c(',')

	g.key("payment")
	g.c('{')
	g.str("method", g.pick(payMethods))
	g.c(',')
	g.str("card_last4", g.digits(4))
	g.c(',')
	g.str("auth_code", g.code(12))
	g.c(',')
	g.str("psp_reference", "psp_"+g.hex(24))
	g.c('}')
	g.c(',')

	g.key("client")
	g.c('{')
	g.str("ip", strconv.Itoa(1+r.IntN(223))+"."+strconv.Itoa(r.IntN(256))+"."+strconv.Itoa(r.IntN(256))+"."+strconv.Itoa(1+r.IntN(254)))
	g.c(',')
	g.str("user_agent", g.pick(userAgents))
	g.c(',')
	g.str("session_id", g.code(22))
	g.c(',')
	g.str("locale", city.locale)
	g.c('}')
	if r.IntN(4) == 0 {
		g.c(',')
		g.str("coupon", g.pick(coupons))
	}
	if r.IntN(5) == 0 {
		g.c(',')
		g.str("note", g.pick(notes))
	}
	g.c('}')

	headers = []kgo.RecordHeader{
		{Key: "event-type", Value: []byte(event)},
		{Key: "content-type", Value: []byte("application/json")},
		{Key: "schema-version", Value: []byte("3")},
		{Key: "trace-id", Value: []byte(g.hex(32))},
	}
	return []byte(custID), g.b, headers
}

func pad7(n int64) string {
	s := strconv.FormatInt(n, 10)
	for len(s) < 7 {
		s = "0" + s
	}
	return s
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var (
	eventTypes = []string{"OrderCreated", "OrderPaid", "OrderPacked", "OrderShipped", "OrderDelivered", "OrderCancelled", "OrderRefunded"}
	statuses   = []string{"pending", "paid", "packed", "shipped", "delivered", "cancelled", "refunded", "on_hold"}
	channels   = []string{"web", "ios", "android", "pos", "marketplace", "call_center"}
	tiers      = []string{"bronze", "silver", "gold", "platinum", "staff"}
	currencies = []string{"EUR", "USD", "GBP", "CHF", "SEK", "PLN", "JPY", "CAD"}
	firstNames = []string{"Anna", "Ben", "Chloe", "David", "Emma", "Felix", "Greta", "Hugo", "Ines", "Jonas", "Karin", "Liam",
		"Maja", "Noah", "Olivia", "Paul", "Quentin", "Rosa", "Samir", "Tara", "Ugo", "Vera", "Wim", "Xenia", "Yusuf", "Zoe",
		"Aiko", "Bruno", "Carmen", "Dmitri", "Elif", "Farid", "Giulia", "Hana", "Ivan", "Julia", "Kenji", "Lena", "Marco", "Nadia"}
	lastNames = []string{"Smith", "Mueller", "Garcia", "Rossi", "Dubois", "Nowak", "Jansen", "Silva", "Kowalski", "Novak",
		"Andersson", "Nielsen", "Papadopoulos", "Yilmaz", "Tanaka", "Kim", "Chen", "Singh", "OConnor", "Fischer", "Schmidt",
		"Moreau", "Bianchi", "Lopez", "Martin", "Bernard", "Petrov", "Horvat", "Virtanen", "Costa"}
	mailDomains = []string{"example.com", "mail.example.org", "post.example.net", "inbox.example.de", "web.example.fr", "corp.example.co.uk"}
	streets     = []string{"Main Street", "Station Road", "High Street", "Church Lane", "Mill Road", "Park Avenue", "Bahnhofstrasse",
		"Rue de la Paix", "Via Roma", "Calle Mayor", "Kerkstraat", "Ulica Dluga", "Storgatan", "Hauptstrasse", "Oak Drive",
		"Elm Street", "Market Square", "Harbour View", "King Street", "Queen Street", "Victoria Road", "Lindenweg"}
	shipMethods = []string{"standard", "express", "next_day", "pickup_point", "click_and_collect"}
	payMethods  = []string{"card", "paypal", "klarna", "apple_pay", "google_pay", "bank_transfer", "gift_card"}
	coupons     = []string{"WELCOME10", "SPRING24", "FREESHIP", "VIP-20", "BLACKFRIDAY", "LOYALTY5"}
	notes       = []string{"Please leave the parcel with the neighbour.", "Gift wrap, no invoice in the box.",
		"Deliver after 5 pm.", "Ring twice.", "Fragile: glass inside.", "Call on arrival."}
	userAgents = []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
		"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Mobile Safari/537.36",
		"Mozilla/5.0 (X11; Linux x86_64; rv:127.0) Gecko/20100101 Firefox/127.0",
		"ShopApp/5.12.3 (iOS 17.5; iPhone15,2)", "ShopApp/5.12.1 (Android 14; SM-S921B)",
	}
)

type city struct {
	name, country, locale, postcodePrefix string
	postcodeDigits, vat                   int
}

var cities = []city{
	{"Berlin", "DE", "de-DE", "10", 3, 19}, {"Hamburg", "DE", "de-DE", "20", 3, 19}, {"Munich", "DE", "de-DE", "80", 3, 19},
	{"Paris", "FR", "fr-FR", "750", 2, 20}, {"Lyon", "FR", "fr-FR", "690", 2, 20}, {"Amsterdam", "NL", "nl-NL", "10", 2, 21},
	{"Rotterdam", "NL", "nl-NL", "30", 2, 21}, {"Madrid", "ES", "es-ES", "280", 2, 21}, {"Barcelona", "ES", "es-ES", "080", 2, 21},
	{"Rome", "IT", "it-IT", "001", 2, 22}, {"Milan", "IT", "it-IT", "201", 2, 22}, {"Warsaw", "PL", "pl-PL", "00-", 3, 23},
	{"Stockholm", "SE", "sv-SE", "11", 3, 25}, {"Copenhagen", "DK", "da-DK", "1", 3, 25}, {"Vienna", "AT", "de-AT", "1", 3, 20},
	{"Zurich", "CH", "de-CH", "80", 2, 8}, {"London", "GB", "en-GB", "SW1A ", 3, 20}, {"Manchester", "GB", "en-GB", "M", 3, 20},
	{"Dublin", "IE", "en-IE", "D0", 1, 23}, {"Lisbon", "PT", "pt-PT", "1", 3, 23}, {"Brussels", "BE", "fr-BE", "10", 2, 21},
	{"Prague", "CZ", "cs-CZ", "110 ", 2, 21}, {"Helsinki", "FI", "fi-FI", "00", 3, 24}, {"Oslo", "NO", "nb-NO", "0", 3, 25},
	{"New York", "US", "en-US", "100", 2, 8}, {"Chicago", "US", "en-US", "606", 2, 10}, {"Toronto", "CA", "en-CA", "M5", 1, 13},
	{"Tokyo", "JP", "ja-JP", "100-", 4, 10},
}

type product struct {
	sku, name, category string
	cents               int64
}

var products = []product{
	{"TSH", "Organic cotton T-shirt", "apparel", 1999}, {"HOO", "Zip hoodie", "apparel", 4999}, {"JNS", "Slim fit jeans", "apparel", 6999},
	{"SNK", "Running sneakers", "shoes", 8999}, {"BOT", "Leather ankle boots", "shoes", 12999}, {"SCK", "Merino socks 3-pack", "apparel", 1499},
	{"MUG", "Ceramic coffee mug", "home", 1299}, {"LMP", "Desk lamp with USB-C", "home", 3999}, {"PIL", "Linen pillow cover", "home", 2499},
	{"TWL", "Bath towel set", "home", 3499}, {"PAN", "Cast iron skillet 26 cm", "kitchen", 4499}, {"KNF", "Chef knife 20 cm", "kitchen", 5999},
	{"KTL", "Electric kettle 1.7 l", "kitchen", 3999}, {"GRN", "Coffee grinder", "kitchen", 6999}, {"BTL", "Insulated bottle 750 ml", "outdoor", 2499},
	{"TNT", "Two-person tent", "outdoor", 14999}, {"BAG", "Daypack 20 l", "outdoor", 5999}, {"HDL", "Headlamp 400 lm", "outdoor", 2999},
	{"EBK", "Paperback novel", "books", 1299}, {"CBK", "Cookbook, hardcover", "books", 2999}, {"PZL", "Jigsaw puzzle 1000 pieces", "toys", 1999},
	{"LGO", "Building bricks starter set", "toys", 3999}, {"HPH", "Wireless headphones", "electronics", 9999}, {"CBL", "USB-C cable 2 m", "electronics", 999},
	{"CHG", "65 W charger", "electronics", 3499}, {"SPK", "Bluetooth speaker", "electronics", 5999}, {"WCH", "Fitness watch", "electronics", 14999},
	{"KBD", "Mechanical keyboard", "electronics", 8999}, {"MSE", "Wireless mouse", "electronics", 2999}, {"PLT", "Potted monstera", "garden", 2999},
	{"SEE", "Herb seed kit", "garden", 999}, {"GLV", "Garden gloves", "garden", 1199}, {"SHP", "Shampoo 250 ml", "beauty", 899},
	{"CRM", "Face cream 50 ml", "beauty", 2499}, {"TEA", "Green tea, 100 g", "grocery", 799}, {"COF", "Coffee beans 1 kg", "grocery", 2499},
}
