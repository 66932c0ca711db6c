package sale

import "github.com/clientele/clientele/domain/values"

// Field names the rules of this package refer to by name.
const (
	FieldExternalID   = "sale_external_id"
	FieldRows         = "sale_rows"
	FieldDate         = "sale_date"
	FieldCurrency     = "sale_currency"
	FieldExchangeRate = "sale_exchange_rate"
	FieldState        = "sale_state"
	FieldTotal        = "sale_total"
	FieldCustomerID   = "sale_customer_id"
	FieldPhoneNumber  = "sale_phone_number"
	FieldEmail        = "sale_email"
	FieldCountry      = "sale_country"

	RowExternalID = "external_id"
	RowProductID  = "product_id"
	RowSKU        = "product_sku"
	RowEAN        = "ean"
	RowQuantity   = "quantity"
	RowUnitPrice  = "unit_price"
	RowDiscount   = "discount"
	RowTotal      = "total"
)

// inCurrency is the suffix of the amounts in the sale's currency.
const inCurrency = "_in_currency"

// kind is how a field's value is validated and normalised.
type kind int

const (
	kindText     kind = iota // string (a number kept as its text)
	kindID                   // non-empty string, at most 200 (numbers as text)
	kindDateTime             // UTC, values.DateTimeLayout
	kindCurrency             // ISO 4217, upper-case
	kindRate                 // positive decimal, as a normalised decimal string
	kindMoney                // whole minor units, not negative
	kindDiscount             // whole minor units, the absolute value
	kindTotal                // whole minor units, negative allowed
	kindQuantity             // number rounded to two decimals, json.Number
	kindList                 // list of strings, in order
	kindSet                  // list of strings, sorted, without duplicates
	kindState                // one of States, upper-case
	kindBool                 // boolean
	kindURL                  // absolute http(s) URL
)

// txFields are the transaction-level fields but for sale_external_id,
// sale_rows and the customer part (customerFields).
var txFields = map[string]kind{
	FieldDate:                    kindDateTime,
	FieldCurrency:                kindCurrency,
	FieldExchangeRate:            kindRate,
	"sale_discount":              kindDiscount,
	"sale_discount_in_currency":  kindDiscount,
	"sale_shipping":              kindMoney,
	"sale_shipping_in_currency":  kindMoney,
	FieldTotal:                   kindTotal,
	"sale_total_in_currency":     kindTotal,
	"sale_payment_method":        kindList,
	"sale_coupon_codes":          kindList,
	"sale_tags":                  kindSet,
	"sale_shipping_method":       kindText,
	"sale_shop_id":               kindText,
	"sale_datasource":            kindText,
	"sale_conversion_user_agent": kindText,
	FieldState:                   kindState,
	"sale_is_deleted":            kindBool,
	"sale_conversion_url":        kindURL,
}

// permanent are the transaction fields a sale always has once given: ""
// cannot remove them.
var permanent = map[string]bool{FieldDate: true, FieldCurrency: true, FieldExchangeRate: true, FieldState: true}

// customerFields maps the sale fields of the customer part to the
// customer's field names; customer.Parser validates them.
var customerFields = map[string]string{
	FieldCustomerID:           "external_id",
	FieldEmail:                "email",
	FieldPhoneNumber:          "phone_number",
	"sale_first_name":         "first_name",
	"sale_last_name":          "last_name",
	"sale_customer_company":   "company",
	"sale_customer_language":  "language",
	"sale_customer_can_email": "can_email",
	"sale_customer_can_sms":   "can_sms",
	"sale_street_address":     "street_address",
	"sale_city":               "city",
	"sale_zip_code":           "zip_code",
	FieldCountry:              "country",
}

// identifiers are the customer part's fields that find the customer.
var identifiers = []string{FieldCustomerID, FieldEmail, FieldPhoneNumber}

// rowFields are the fields of a row.
var rowFields = map[string]kind{
	RowExternalID:             kindID,
	RowProductID:              kindID,
	RowEAN:                    kindID,
	RowSKU:                    kindID,
	RowQuantity:               kindQuantity,
	RowUnitPrice:              kindMoney,
	RowUnitPrice + inCurrency: kindMoney,
	RowDiscount:               kindDiscount,
	RowDiscount + inCurrency:  kindDiscount,
	RowTotal:                  kindTotal,
	RowTotal + inCurrency:     kindTotal,
	"unit":                    kindText,
	"is_deleted":              kindBool,
	"tags":                    kindSet,
	"product_brand":           kindText, // validated by product.Parser.Details
	"product_title":           kindText,
	"product_type":            kindText,
	"product_vendor":          kindText,
	"product_category":        kindText,
}

// productDetails maps the row fields that describe the product to the
// product's field names (product.Ref.Details).
var productDetails = map[string]string{
	"product_brand":    "brand",
	"product_title":    "title",
	"product_type":     "type",
	"product_vendor":   "vendor",
	"product_category": "category",
}

// converted are the amounts that have an _in_currency variant, which
// replaces them: transaction-level first, then row-level.
var (
	txConverted  = []string{"sale_discount", "sale_shipping", FieldTotal}
	rowConverted = []string{RowUnitPrice, RowDiscount, RowTotal}
)

func safeName(key string) string { return values.SafeName(key) }
