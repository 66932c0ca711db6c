package customer

// Field names of the Customer table of the interface. A record's keys, the
// keys of Changes.Set and the names in Upserted.Fields all use them.
const (
	FieldExternalID   = "external_id"
	FieldPhoneNumber  = "phone_number"
	FieldEmail        = "email"
	FieldMailingLists = "mailing_lists"
	FieldTags         = "tags"
	FieldIsDeleted    = "is_deleted"
	FieldIsForgotten  = "is_forgotten"
)

// FieldToken is the customer's tracking token, issued by Clientele
// (Token): a record may name it to find its customer, never set it.
const FieldToken = "customer_token"

// Permissions are the boolean permissions. Each is false on a customer
// that was never given it: a created customer gets false for every one its
// record omits, in Changes.Set.
var Permissions = []string{"can_email", "can_post", "can_profile", "can_push", "can_sms"}

// kind is how a field's value is validated and normalised.
type kind int

const (
	kindText       kind = iota // free string, kept as sent
	kindExternalID             // letters, digits and dashes
	kindPhone                  // E.164
	kindEmail                  // lower-cased address
	kindCountry                // ISO 3166-1 alpha-2, upper-case
	kindLanguage               // ISO 639 base language, lower-case
	kindDate                   // YYYY-MM-DD
	kindDateTime               // UTC, ISO 8601 with Z
	kindPermission             // boolean, "" sets false
	kindFlag                   // is_deleted, is_forgotten: not stored
	kindList                   // set of strings
	kindToken                  // customer_token: finds the customer, never stored from a record
)

// fields is the catalogue of the Customer table. A record key that is not
// here, not a list operation and not a company field rejects the record.
var fields = map[string]kind{
	FieldExternalID:         kindExternalID,
	FieldPhoneNumber:        kindPhone,
	FieldEmail:              kindEmail,
	FieldToken:              kindToken,
	"canonical_id":          kindText,
	"first_name":            kindText,
	"last_name":             kindText,
	"can_email":             kindPermission,
	"can_post":              kindPermission,
	"can_profile":           kindPermission,
	"can_push":              kindPermission,
	"can_sms":               kindPermission,
	"date_joined":           kindDateTime,
	FieldMailingLists:       kindList,
	FieldIsForgotten:        kindFlag,
	"shop_id":               kindText,
	"birth_date":            kindDate,
	"city":                  kindText,
	"company":               kindText,
	"province":              kindText,
	"zip_code":              kindText,
	"vat_number":            kindText,
	"country":               kindCountry,
	"gender":                kindText,
	"house_number":          kindText,
	"house_number_addition": kindText,
	"language":              kindLanguage,
	"last_login":            kindDateTime,
	"street_address":        kindText,
	"street_name":           kindText,
	FieldTags:               kindList,
	FieldIsDeleted:          kindFlag,
}

// listOps are the keys that change a list incrementally, and the list and
// operation each stands for.
var listOps = map[string]struct {
	list string
	add  bool
}{
	"mailing_lists.add":    {FieldMailingLists, true},
	"mailing_lists.remove": {FieldMailingLists, false},
	"tags.add":             {FieldTags, true},
	"tags.remove":          {FieldTags, false},
}
