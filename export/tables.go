package export

// Table is one exported read model: a file named Name, read from the
// scratch copy of a read-model table by the query From builds.
type Table struct {
	// Name names the file (Name.parquet, Name.ndjson).
	Name string
	// Source is the read-model table the rows come from; its projector
	// must be among Config.Projectors.
	Source string
	// From returns the FROM ... WHERE ... ORDER BY part of the query,
	// given the scratch copy of Source (quoted); $1 is the company.
	From func(source string) string
	// Doc is the SQL expression of the row's document, which the Path
	// columns read ("" when none does).
	Doc string
	// Columns are the file's columns, in order.
	Columns []Column
}

// Tables are the read models an export writes, in order. Segment members
// are not here yet: when segments have a read model, its table is added
// here (with the columns segment_key, customer_id and since) and its
// projector to Config.Projectors.
func Tables() []Table {
	return []Table{customers, products, shops, events, sales, saleRows, campaigns}
}

// sqlCol is a column selected from the table; docCol one read from the
// document.
func sqlCol(name string, k Kind, expr string, required bool) Column {
	return Column{Name: name, Kind: k, SQL: expr, Required: required}
}

func docCol(name string, k Kind) Column { return Column{Name: name, Kind: k, Path: name} }

// docCols are columns read from document members of the same names.
func docCols(k Kind, names ...string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		out[i] = docCol(n, k)
	}
	return out
}

// rowTimes are the columns every read-model table has.
var rowTimes = []Column{
	sqlCol("version", Integer, "t.version", true),
	sqlCol("created_at", Timestamp, "t.created_at", true),
	sqlCol("updated_at", Timestamp, "t.updated_at", true),
}

func join(parts ...[]Column) []Column {
	var out []Column
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// customers: a deleted customer is shown as retrieval shows one (its id,
// is_deleted and is_forgotten only), a forgotten one holds nothing
// personal (the projector saw to it).
var customers = Table{
	Name:   "customers",
	Source: "customers",
	From: func(src string) string {
		return `FROM ` + src + ` t WHERE t.company_id = $1 ORDER BY t.customer_id`
	},
	Doc: `(CASE WHEN t.is_deleted THEN jsonb_build_object('id', t.customer_id, 'is_deleted', true, 'is_forgotten', t.is_forgotten) ELSE t.doc END)`,
	Columns: join(
		[]Column{
			sqlCol("customer_id", Text, "t.customer_id", true),
			sqlCol("is_deleted", Boolean, "t.is_deleted", true),
			sqlCol("is_forgotten", Boolean, "t.is_forgotten", true),
		},
		docCols(Text, "external_id", "email", "phone_number", "customer_token", "canonical_id", "first_name", "last_name", "gender"),
		[]Column{docCol("birth_date", Date)},
		docCols(Text, "street_address", "street_name", "house_number", "house_number_addition", "zip_code", "city",
			"province", "country", "company", "vat_number", "language", "shop_id"),
		docCols(Boolean, "can_email", "can_post", "can_profile", "can_push", "can_sms"),
		docCols(Timestamp, "date_joined", "last_login"),
		docCols(JSON, "tags", "mailing_lists"),
		rowTimes,
		[]Column{{Name: "doc", Kind: JSON, Path: "@this", Required: true}},
	),
}

var products = Table{
	Name:   "products",
	Source: "products",
	From: func(src string) string {
		return `FROM ` + src + ` t WHERE t.company_id = $1 ORDER BY t.product_id`
	},
	Doc: "t.doc",
	Columns: join(
		[]Column{
			sqlCol("product_id", Text, "t.product_id", true),
			sqlCol("is_deleted", Boolean, "t.is_deleted", true),
		},
		docCols(Text, "external_id", "title", "brand", "type", "vendor", "sku", "currency", "language", "shop_id", "url", "image"),
		docCols(JSON, "category", "category_id", "ean", "tags"),
		docCols(Integer, "price", "sale_price", "lowest_price", "highest_price", "price_before_campaign", "minimal_price"),
		docCols(Boolean, "in_stock", "visible"),
		[]Column{docCol("date", Timestamp)},
		rowTimes,
		[]Column{{Name: "doc", Kind: JSON, Path: "@this", Required: true}},
	),
}

var shops = Table{
	Name:   "shops",
	Source: "shops",
	From: func(src string) string {
		return `FROM ` + src + ` t WHERE t.company_id = $1 ORDER BY t.shop_id`
	},
	Doc: "t.doc",
	Columns: join(
		[]Column{sqlCol("shop_id", Text, "t.shop_id", true)},
		docCols(Text, "external_id", "name", "shop_type", "email", "phone_number", "street_address", "city", "country"),
		[]Column{docCol("is_hidden", Boolean)},
		rowTimes,
		[]Column{{Name: "doc", Kind: JSON, Path: "@this", Required: true}},
	),
}

var events = Table{
	Name:   "events",
	Source: "activity_events",
	From: func(src string) string {
		return `FROM ` + src + ` t WHERE t.company_id = $1 ORDER BY t.event_id`
	},
	Doc: "t.doc",
	Columns: join(
		[]Column{
			sqlCol("event_id", Integer, "t.event_id", true),
			sqlCol("customer_id", Text, "t.customer_id", true),
			sqlCol("is_deleted", Boolean, "t.is_deleted", true),
		},
		docCols(Text, "type"),
		[]Column{docCol("date", Timestamp)},
		docCols(Text, "source", "reason", "label", "path", "campaign_key", "utm_campaign", "utm_source", "utm_medium",
			"utm_content", "sale_id", "product_id"),
		rowTimes,
		[]Column{{Name: "doc", Kind: JSON, Path: "@this", Required: true}},
	),
}

// sales: money in minor units of the company's currency (the _in_currency
// columns in the sale's own currency).
var sales = Table{
	Name:   "sales",
	Source: "sales",
	From: func(src string) string {
		return `FROM ` + src + ` t WHERE t.company_id = $1 ORDER BY t.sale_id`
	},
	Doc: "t.doc",
	Columns: join(
		[]Column{
			sqlCol("sale_id", Text, "t.sale_id", true),
			sqlCol("customer_id", Text, "t.customer_id", true),
			sqlCol("is_deleted", Boolean, "t.is_deleted", true),
			sqlCol("sale_state", Text, "t.state", true),
			sqlCol("sale_date", Timestamp, "t.sale_date", false),
			sqlCol("counted", Boolean, "t.counted", true),
			sqlCol("revenue", Integer, "t.revenue", true),
		},
		docCols(Text, "sale_external_id", "sale_customer_id", "sale_email", "sale_phone_number", "sale_currency",
			"sale_exchange_rate", "sale_shop_id", "sale_shipping_method", "sale_datasource"),
		docCols(Integer, "sale_total", "sale_total_in_currency", "sale_discount", "sale_discount_in_currency",
			"sale_shipping", "sale_shipping_in_currency"),
		docCols(JSON, "sale_payment_method", "sale_coupon_codes", "sale_tags"),
		rowTimes,
		[]Column{{Name: "doc", Kind: JSON, Path: "@this", Required: true}},
	),
}

// saleRows are the rows of the sales (the sale's doc's sale_rows, which
// hold the rows not deleted), one line each, numbered from 1 in order.
var saleRows = Table{
	Name:   "sale_rows",
	Source: "sales",
	From: func(src string) string {
		return `FROM ` + src + ` t CROSS JOIN LATERAL jsonb_array_elements(CASE jsonb_typeof(t.doc->'sale_rows')
			WHEN 'array' THEN t.doc->'sale_rows' ELSE '[]' END) WITH ORDINALITY AS r(row, n)
			WHERE t.company_id = $1 ORDER BY t.sale_id, r.n`
	},
	Doc: "r.row",
	Columns: join(
		[]Column{
			sqlCol("sale_id", Text, "t.sale_id", true),
			sqlCol("row_number", Integer, "r.n", true),
			sqlCol("customer_id", Text, "t.customer_id", true),
		},
		docCols(Text, "external_id", "product_id", "product_sku", "ean", "unit", "product_title", "product_brand",
			"product_type", "product_vendor", "product_category"),
		[]Column{docCol("quantity", Float)},
		docCols(Integer, "unit_price", "unit_price_in_currency", "discount", "discount_in_currency", "total", "total_in_currency"),
		[]Column{docCol("tags", JSON), {Name: "doc", Kind: JSON, Path: "@this", Required: true}},
	),
}

var campaigns = Table{
	Name:   "campaigns",
	Source: "campaigns",
	From: func(src string) string {
		return `FROM ` + src + ` t WHERE t.company_id = $1 ORDER BY t.created_at, t.campaign_key`
	},
	Columns: []Column{
		sqlCol("campaign_key", Text, "t.campaign_key", true),
		sqlCol("kind", Text, "t.kind", true),
		sqlCol("state", Text, "t.state", true),
		sqlCol("name", Text, "t.name", true),
		sqlCol("utm_campaign", Text, "t.utm_campaign", true),
		sqlCol("campaign_tags", JSON, "t.campaign_tags", true),
		sqlCol("folder", JSON, "t.folder", false),
		sqlCol("marketing_permission", Text, "t.marketing_permission", true),
		sqlCol("product_ids", JSON, "to_jsonb(t.product_ids)", true),
		sqlCol("created_by", Text, "t.created_by", true),
		sqlCol("created_at", Timestamp, "t.created_at", true),
		sqlCol("activated_at", Timestamp, "t.activated_at", false),
		sqlCol("updated_at", Timestamp, "t.updated_at", true),
		sqlCol("version", Integer, "t.version", true),
	},
}
