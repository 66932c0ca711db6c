package activity

// Field names with rules of their own.
const (
	fieldType         = "type"
	fieldDate         = "date"
	fieldID           = "id"
	fieldIsDeleted    = "is_deleted"
	fieldCustomerID   = "customer_id"
	fieldEmail        = "email"
	fieldToken        = "customer_token"
	fieldMailingLists = "mailing_lists"
)

// kind is where a field goes and how its value is validated.
type kind int

const (
	kindOwn      kind = iota // type, date, id, is_deleted: read before the others
	kindText                 // string; a number kept as its text
	kindList                 // list of strings, in order; a single string is a list of one
	kindSet                  // list of strings, sorted, without duplicates
	kindInteger              // whole number, int64
	kindCustomer             // a customer field (to), validated by customer.Parser; personal
	kindToken                // customer_token: personal; finds the customer when no other identifier does (customer.Token)
	kindRef                  // names the product (to: external_id, sku or ean)
	kindDetail               // describes the product (to: its product field), for product.Parser.Details
)

// field is one entry of the catalogue.
type field struct {
	kind kind
	// to is the field's name where its value goes: the customer field of
	// a kindCustomer, the product field of a kindRef or a kindDetail.
	// Several event fields may go to one product field (sku and
	// product_sku): clients use both spellings.
	to string
}

// fields is the Event table of the interface with the additions the
// write side needs (the product details an event carries to create its
// product). A key that is none of these and no company field is ignored
// (values.Ignored).
var fields = map[string]field{
	fieldType:      {kindOwn, ""},
	fieldDate:      {kindOwn, ""},
	fieldID:        {kindOwn, ""},
	fieldIsDeleted: {kindOwn, ""},

	"reason":          {kindText, ""},
	"source":          {kindText, ""},
	"utm_campaign":    {kindText, ""},
	"utm_medium":      {kindText, ""},
	"utm_content":     {kindText, ""},
	"utm_source":      {kindText, ""},
	"label":           {kindText, ""},
	"path":            {kindText, ""},
	"sale_id":         {kindText, ""},
	"tracking_number": {kindText, ""},
	"campaign_key":    {kindText, ""},
	"tags":            {kindSet, ""},
	fieldMailingLists: {kindList, ""},
	"sentiment_value": {kindInteger, ""},

	// The customer the event is about: all of them are Personal.
	fieldCustomerID:  {kindCustomer, "external_id"},
	fieldEmail:       {kindCustomer, "email"},
	"phone_number":   {kindCustomer, "phone_number"},
	"first_name":     {kindCustomer, "first_name"},
	"last_name":      {kindCustomer, "last_name"},
	"street_address": {kindCustomer, "street_address"},
	"zip_code":       {kindCustomer, "zip_code"},
	"country":        {kindCustomer, "country"},
	"language":       {kindCustomer, "language"},
	"company":        {kindCustomer, "company"},
	fieldToken:       {kindToken, ""},

	// The product: product_id, else sku, else ean finds it (product.Ref).
	"product_id":  {kindRef, "external_id"},
	"sku":         {kindRef, "sku"},
	"product_sku": {kindRef, "sku"},
	"ean":         {kindRef, "ean"},
	"product_ean": {kindRef, "ean"},

	// What a product created from the event is made of.
	"title":            {kindDetail, "title"},
	"product_title":    {kindDetail, "title"},
	"price":            {kindDetail, "price"},
	"product_price":    {kindDetail, "price"},
	"product_brand":    {kindDetail, "brand"},
	"product_category": {kindDetail, "category"},
	"product_type":     {kindDetail, "type"},
	"product_vendor":   {kindDetail, "vendor"},
	"product_url":      {kindDetail, "url"},
	"product_image":    {kindDetail, "image"},
	"product_currency": {kindDetail, "currency"},
}

// identities are the customer fields that find the customer.
var identities = map[string]bool{"external_id": true, "email": true, "phone_number": true}

// Event types of the interface's table.
var builtinTypes = []string{
	"BROWSE", "MAIL_SUBSCRIBE", "MAIL_UNSUBSCRIBE", "ORDER_SHIPPED",
	"BASKET_ADD", "SENTIMENT", "SMS_SUBSCRIBE", "SMS_UNSUBSCRIBE",
}

// campaignTypes are the activity of campaigns (decisions.md, Campaigns):
// the sending systems report it as events.
var campaignTypes = []string{
	"MAIL_SENT", "MAIL_DELIVERED", "MAIL_OPEN", "MAIL_CLICK", "MAIL_BOUNCE", "MAIL_SPAM_REPORT",
	"SMS_SENT", "SMS_DELIVERED", "SMS_CLICK", "SMS_BOUNCE",
}

// createsCustomer lists the types whose event creates its customer when
// nobody holds its identifiers (interface, event types): a subscription
// form is how people arrive. Any other event is about someone imported
// before.
var createsCustomer = map[string]bool{"MAIL_SUBSCRIBE": true, "SMS_SUBSCRIBE": true}

// browseAny are the fields of which a BROWSE event needs one: what was
// browsed. The interface names product_id and product_ean; sku and the
// other spellings name a product as well.
var browseAny = []string{"label", "path", "utm_campaign", "product_id", "product_ean", "ean", "sku", "product_sku"}

// requiredByType is the one field the types below need. The interface
// names mailing_lists for MAIL_SUBSCRIBE and MAIL_UNSUBSCRIBE too, but
// Magento's newsletter sends none: without it they are about email
// marketing as a whole (customerPart).
var requiredByType = map[string]string{
	"ORDER_SHIPPED": "tracking_number",
	"SENTIMENT":     "sentiment_value",
}
