package readmodels

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/clientele/clientele/domain/segment"
)

// A rule compiled to SQL (the preview's, segment_preview.go) decides it
// over the membership projection's facts tables (segment_customers,
// segment_activity, segment_sales, segment_members) in one statement,
// with segment.Decide's comparisons exactly. Each leaf is a boolean
// expression that is TRUE or FALSE where SQL decides it as Decide does,
// and NULL where it cannot tell (a date written in a form the statement
// does not read, a revenue sum beyond an int64): all, any and not are
// SQL's AND, OR and NOT, whose three-valued logic is exact for such an
// unknown (a rule TRUE or FALSE whatever the unknown leaves are is so
// whatever Decide finds them to be), and the customers whose rule is
// NULL are decided by segment.Decide on their facts.
//
// The comparisons, as eval.go makes them:
//   - a field's value is its JSON value, null as absent (nullif);
//   - numbers compare as doubles: the stored number's decimal, rounded to
//     the nearest double as strconv.ParseFloat rounds it (PostgreSQL's
//     numeric to float8 parses the same decimal with strtod, correctly
//     rounded), a number beyond a double's range being no number and one
//     too small for a double zero (ParseFloat's reading; PostgreSQL would
//     refuse both);
//   - strings, booleans and null compare by JSON equality (jsonb's
//     containment of a scalar: byte equality of strings), an array
//     field equalling a value it holds at its top level;
//   - contains on a string folds both sides as strings.ToLower does:
//     ASCII letters by lower() in the "C" collation, every other letter
//     that unicode.ToLower changes by translate() with the table of them;
//   - a date or datetime is read in SQL when written in the forms
//     instant reads most (2026-03-01, 2026-03-01T12:00:00[.ffffff][Z or
//     +hh:mm], 2026-03-01 12:00:00[.ffffff]), with a valid day and time;
//     a string that does not begin with four digits and a dash is no
//     date for instant either; any other string (a leap second, a
//     nanosecond, an offset of 24 hours) is unknown;
//   - windows are instants: after now less Days*24 hours, not after
//     now; PostgreSQL keeps microseconds, so the instants the leaves
//     compare with are rounded to the microsecond on the side that keeps
//     the comparison (floor for > and <=, ceiling for >= and <).

// A string of a rule holding U+0000 is no parameter (PostgreSQL's text
// cannot hold it), and no fact holds it either: a field of that name is
// absent, no event has that type, no sale that product, no field that
// value. The compiler decides such leaves so, without sending them
// (heldByNoText).

// ruleSQL is a rule compiled to one statement over a company's
// membership facts: the customer_id and the rule's value (TRUE, FALSE or
// NULL: unknown) of every customer with a document whose value is not
// FALSE.
type ruleSQL struct {
	sql  string
	args []any
	// ordered says that sql's joins are written in the order to run
	// them (join_collapse_limit 1): the required aggregates first.
	ordered bool
}

// settings are the statement's settings, for its transaction:
//   - a plan made for its values each time: the same rule's statement
//     run a sixth time on a connection may otherwise get PostgreSQL's
//     generic plan, blind to the windows' dates (at 100,000 customers,
//     21 s a preview instead of 0.2);
//   - JIT off: at a million customers it compiled the statement for 0.13
//     to 0.38 s, more than it saved;
//   - the memory to aggregate a window's customers and hash them without
//     spilling to disk (at a million, 274,513 customers with an event in
//     7 days: the default 4 MB sent the aggregate to disk in 5 batches);
//     the previews run one statement each, rarely (staff, bounded by
//     PreviewTimeout);
//   - hash joins, not merge joins: the planner cannot estimate how many
//     customers a window keeps (17,598 for 274,513), and sorted both
//     sides of each join for a merge;
//   - the joins in their written order, when they are ordered.
func (r ruleSQL) settings() []string {
	s := []string{`SET LOCAL plan_cache_mode = force_custom_plan`, `SET LOCAL jit = off`,
		`SET LOCAL work_mem = '64MB'`, `SET LOCAL enable_mergejoin = off`}
	if r.ordered {
		s = append(s, `SET LOCAL join_collapse_limit = 1`)
	}
	return s
}

// ruleCompiler builds a ruleSQL. $1 is the company.
type ruleCompiler struct {
	args []any
	now  time.Time
	// nowArg is the parameter of now, rounded down to the microsecond,
	// once a window reads it.
	nowArg string
	// fields are the customer's fields read, by name: the column of the
	// customers' lateral subquery holding each.
	fields map[string]string
	// fieldCols are the columns' definitions, in order.
	fieldCols []string
	// joins are the joins of the event, sales and segment leaves.
	joins []leafJoin
	// overflow and underflow are the parameters holding the bounds of a
	// double's range, once a number is compared; fold those of the case
	// folding's table, once a string's case is folded.
	overflow, underflow string
	fold                [2]string
}

// leafJoin is the join of an event, sales or segment leaf: its table or
// subquery (rows), the alias, and the rest of its ON after the customer
// id. A required aggregate (an event or sales leaf reached through all
// alone) is joined first.
type leafJoin struct {
	rows, alias, on string
	required        bool
	aggregate       bool
}

// compileRule compiles r to decide it at now for the company.
//
// The customers a required aggregate keeps are a part of the company's,
// often small, and the intersection of two of them smaller still, while
// the planner cannot estimate any of them (counts in windows): left to
// it, at a million customers, every set was hashed against the million
// documents before the next was joined (docs/benchmarks.md, "The preview
// at a million, ordered"). So the required aggregates are joined first, one
// to the next, and then the documents; the statement is run in that
// order (ordered).
func compileRule(company string, r segment.Rule, now time.Time) (ruleSQL, error) {
	c := &ruleCompiler{now: now, fields: map[string]string{}}
	c.arg(company)
	expr, err := c.rule(r, true)
	if err != nil {
		return ruleSQL{}, err
	}
	var sb strings.Builder
	sb.WriteString(`SELECT customer_id, member FROM (SELECT c.customer_id, `)
	sb.WriteString(expr)
	sb.WriteString(` AS member FROM `)
	first := ""
	for _, j := range c.joins {
		if !j.required || !j.aggregate {
			continue
		}
		if first == "" {
			first = j.alias
			fmt.Fprintf(&sb, "%s %s\n", j.rows, j.alias)
			continue
		}
		fmt.Fprintf(&sb, "JOIN %s %s ON %s.customer_id = %s.customer_id%s\n", j.rows, j.alias, j.alias, first, j.on)
	}
	// The fields are read once a customer (a lateral subquery kept
	// apart by OFFSET 0), and segment_customers stays a table the joins
	// may reach by its key.
	if first != "" {
		fmt.Fprintf(&sb, "JOIN segment_customers c ON c.company_id = $1 AND c.customer_id = %s.customer_id", first)
	} else {
		sb.WriteString(`segment_customers c`)
	}
	if len(c.fieldCols) > 0 {
		sb.WriteString(` CROSS JOIN LATERAL (SELECT `)
		sb.WriteString(strings.Join(c.fieldCols, ", "))
		sb.WriteString(` OFFSET 0) f`)
	}
	for _, j := range c.joins {
		if j.required && j.aggregate {
			continue
		}
		fmt.Fprintf(&sb, "\n%s %s %s ON %s.customer_id = c.customer_id%s", join(j.required), j.rows, j.alias, j.alias, j.on)
	}
	sb.WriteString(`
	WHERE c.company_id = $1 OFFSET 0) d WHERE member IS NOT FALSE`)
	return ruleSQL{sql: sb.String(), args: c.args, ordered: first != ""}, nil
}

// arg adds a parameter and returns its placeholder.
func (c *ruleCompiler) arg(v any) string {
	c.args = append(c.args, v)
	return fmt.Sprintf("$%d", len(c.args))
}

// text adds a string parameter.
func (c *ruleCompiler) text(s string) string {
	return c.arg(s) + "::text"
}

// heldByNoText reports whether no text of PostgreSQL holds s.
func heldByNoText(s string) bool {
	return strings.ContainsRune(s, 0)
}

// rule compiles r. required says that the rule is FALSE whenever r is:
// r is the rule, or a part of it reached through all alone. The leaves
// of events, sales and segments so required join only the customers
// that have a row of them (an inner join, the rows of too few events
// dropped): the rest are FALSE.
func (c *ruleCompiler) rule(r segment.Rule, required bool) (string, error) {
	switch {
	case r.All != nil, r.Any != nil:
		subs, op := r.All, " AND "
		if r.Any != nil {
			subs, op, required = r.Any, " OR ", false
		}
		parts := make([]string, len(subs))
		for i, sub := range subs {
			var err error
			if parts[i], err = c.rule(sub, required); err != nil {
				return "", err
			}
		}
		return "(" + strings.Join(parts, op) + ")", nil
	case r.Not != nil:
		sub, err := c.rule(*r.Not, false)
		return "(NOT " + sub + ")", err
	case r.Segment != "":
		if heldByNoText(r.Segment) {
			return "false", nil
		}
		key := c.text(r.Segment)
		alias := fmt.Sprintf("m%d", len(c.joins))
		c.joins = append(c.joins, leafJoin{rows: "segment_members", alias: alias, required: required,
			on: fmt.Sprintf(" AND %[1]s.company_id = $1 AND %[1]s.segment_key = %[2]s", alias, key)})
		return "(" + alias + ".customer_id IS NOT NULL)", nil
	case r.Field != nil:
		col, ok := c.fields[r.Field.Field]
		if heldByNoText(r.Field.Field) {
			col, ok = "NULL::jsonb", true
		}
		if !ok {
			name := c.text(r.Field.Field)
			col = fmt.Sprintf("f.f%d", len(c.fieldCols))
			c.fields[r.Field.Field] = col
			c.fieldCols = append(c.fieldCols, fmt.Sprintf("nullif(c.doc -> %s, 'null'::jsonb) AS f%d", name, len(c.fieldCols)))
		}
		return c.field(col, *r.Field)
	case r.Event != nil:
		return c.event(*r.Event, required)
	case r.Sales != nil:
		return c.sales(*r.Sales, required)
	}
	return "false", nil
}

// join is the join of a leaf's rows.
func join(required bool) string {
	if required {
		return "JOIN"
	}
	return "LEFT JOIN"
}

// event joins the counts of the customers' events of the leaf's type in
// its window: those whose where is TRUE (yes), and those whose where is
// not FALSE (maybe); the leaf is TRUE when yes reaches its count, FALSE
// when maybe does not, unknown between.
func (c *ruleCompiler) event(l segment.EventLeaf, required bool) (string, error) {
	if heldByNoText(l.Type) {
		// No event, and a count of at least 1.
		return "false", nil
	}
	typ := c.text(l.Type)
	alias := fmt.Sprintf("e%d", len(c.joins))
	var cols []string
	var where []string
	seen := map[string]string{}
	for _, w := range l.Where {
		col, ok := seen[w.Field]
		if heldByNoText(w.Field) {
			col, ok = "NULL::jsonb", true
		}
		if !ok {
			name := c.text(w.Field)
			col = fmt.Sprintf("a.w%d", len(cols))
			seen[w.Field] = col
			cols = append(cols, fmt.Sprintf(", nullif(fields -> %s, 'null'::jsonb) AS w%d", name, len(cols)))
		}
		expr, err := c.field(col, w)
		if err != nil {
			return "", err
		}
		where = append(where, expr)
	}
	window := c.window(l.WithinDays)
	yes, maybe := "count(*)", "count(*)"
	if len(where) > 0 {
		w := "(" + strings.Join(where, " AND ") + ")"
		yes, maybe = "count(*) FILTER (WHERE "+w+")", "count(*) FILTER (WHERE "+w+" IS NOT FALSE)"
	}
	counts := yes + " AS yes, " + maybe + " AS maybe"
	k := c.arg(l.MinCount)
	having := ""
	if required {
		having = " HAVING " + maybe + " >= " + k
	}
	c.joins = append(c.joins, leafJoin{alias: alias, required: required, aggregate: true,
		rows: fmt.Sprintf(`(SELECT a.customer_id, %[1]s FROM (SELECT customer_id%[2]s FROM segment_activity
			WHERE company_id = $1 AND type = %[3]s AND at <= %[5]s%[4]s OFFSET 0) a GROUP BY a.customer_id%[6]s)`,
			counts, strings.Join(cols, ""), typ, window, c.nowAt(), having)})
	return fmt.Sprintf(`(CASE WHEN coalesce(%[1]s.yes, 0) >= %[2]s THEN true WHEN coalesce(%[1]s.maybe, 0) < %[2]s THEN false END)`, alias, k), nil
}

// nowAt is the placeholder of now.
func (c *ruleCompiler) nowAt() string {
	if c.nowArg == "" {
		c.nowArg = c.arg(floorMicro(c.now)) + "::timestamptz"
	}
	return c.nowArg
}

// window is the condition on at of a leaf's window of days (none: ever).
func (c *ruleCompiler) window(days int) string {
	if days == 0 {
		return ""
	}
	return " AND at > " + c.arg(floorMicro(c.now.Add(-time.Duration(days)*segment.Day)))
}

// sales joins the count and the revenue of the customers' counted sales
// in the leaf's window, of its product. Decide sums int64s: a sum beyond
// their range is unknown.
func (c *ruleCompiler) sales(l segment.SalesLeaf, required bool) (string, error) {
	alias := fmt.Sprintf("s%d", len(c.joins))
	product := ""
	if heldByNoText(l.ProductID) {
		// No sale, and a count of at least 1.
		return "false", nil
	}
	if l.ProductID != "" {
		product = " AND products @> ARRAY[" + c.text(l.ProductID) + "]"
	}
	window := c.window(l.WithinDays)
	k, m := c.arg(l.MinCount), c.arg(l.MinRevenue)
	having := ""
	if required {
		having = fmt.Sprintf(" HAVING count(*) >= %s AND (sum(revenue) >= %s OR sum(revenue) NOT BETWEEN %s AND %s)", k, m, minInt64, maxInt64)
	}
	c.joins = append(c.joins, leafJoin{alias: alias, required: required, aggregate: true,
		rows: fmt.Sprintf(`(SELECT customer_id, count(*) AS n, sum(revenue) AS total FROM segment_sales
			WHERE company_id = $1 AND counted AND at IS NOT NULL AND at <= %[3]s%[1]s%[2]s GROUP BY customer_id%[4]s)`,
			window, product, c.nowAt(), having)})
	return fmt.Sprintf(`(CASE WHEN coalesce(%[1]s.total, 0) BETWEEN %[4]s AND %[5]s
			THEN coalesce(%[1]s.n, 0) >= %[2]s AND coalesce(%[1]s.total, 0) >= %[3]s END)`,
		alias, k, m, minInt64, maxInt64), nil
}

// The range of an int64, which Decide sums revenue in.
const minInt64, maxInt64 = "-9223372036854775808", "9223372036854775807"

// field is a field leaf on the jsonb column col (NULL: absent or null).
func (c *ruleCompiler) field(col string, l segment.FieldLeaf) (string, error) {
	switch l.Op {
	case segment.Exists:
		if b, _ := l.Value.(bool); b {
			return "(" + col + " IS NOT NULL)", nil
		}
		return "(" + col + " IS NULL)", nil
	case segment.Eq, segment.Ne, segment.In:
		values := []any{l.Value}
		if l.Op == segment.In {
			values, _ = l.Value.([]any)
		}
		match, err := c.matchesAny(col, values)
		if err != nil {
			return "", err
		}
		if l.Op == segment.Ne {
			return fmt.Sprintf("(CASE WHEN %s IS NULL THEN true ELSE NOT %s END)", col, match), nil
		}
		return match, nil
	case segment.Contains:
		if w, ok := l.Value.(string); ok {
			if heldByNoText(w) {
				return "false", nil
			}
			lw := c.text(segment.Fold(w))
			elem, err := c.matchesAny(col, []any{w})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf(`(CASE jsonb_typeof(%[1]s) WHEN 'string' THEN strpos(%[2]s, %[3]s) > 0 WHEN 'array' THEN %[4]s ELSE false END)`,
				col, c.folded(col+" #>> '{}'"), lw, elem), nil
		}
		elem, err := c.matchesAny(col, []any{l.Value})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(`(CASE jsonb_typeof(%s) WHEN 'array' THEN %s ELSE false END)`, col, elem), nil
	case segment.Gt, segment.Gte, segment.Lt, segment.Lte:
		op := map[segment.Op]string{segment.Gt: ">", segment.Gte: ">=", segment.Lt: "<", segment.Lte: "<="}[l.Op]
		switch w := l.Value.(type) {
		case json.Number:
			f, ok := segment.Number(w)
			if !ok {
				return "false", nil
			}
			return fmt.Sprintf("coalesce(%s %s %s::float8, false)", c.number(col), op, c.arg(f)), nil
		case string:
			at, ok := segment.Instant(w)
			if !ok {
				return "false", nil
			}
			// The field's instants are whole microseconds.
			if l.Op == segment.Gte || l.Op == segment.Lt {
				at = ceilMicro(at)
			} else {
				at = floorMicro(at)
			}
			return c.dated(col, fmt.Sprintf("%%s %s %s::timestamptz", op, c.arg(at)), "false"), nil
		}
		return "false", nil
	case segment.WithinDays, segment.NotWithinDays:
		in := fmt.Sprintf("%%s <@ tstzrange(%s::timestamptz, %s, '(]')",
			c.arg(floorMicro(c.now.Add(-time.Duration(l.Days)*segment.Day))), c.nowAt())
		if l.Op == segment.WithinDays {
			return c.dated(col, in, "false"), nil
		}
		return c.dated(col, "NOT ("+in+")", "true"), nil
	}
	return "false", nil
}

// dated applies cond (a format of the instant) to col's value when it is
// a string that may be a date, and is otherwise: a string that is not a
// date for instant, or any other value. cond is NULL (unknown) when the
// string is not in a form the statement reads.
func (c *ruleCompiler) dated(col, cond, otherwise string) string {
	s := col + " #>> '{}'"
	return fmt.Sprintf(`(CASE WHEN jsonb_typeof(%[1]s) = 'string' AND (%[2]s) ~ '^[0-9]{4}-' THEN %[3]s ELSE %[4]s END)`,
		col, s, fmt.Sprintf(cond, instantSQL(s)), otherwise)
}

// matchesAny is TRUE when col's value, or an element of it when it is
// an array, equals one of values (eval.go's matchesAny and equal), FALSE
// otherwise, absent included.
func (c *ruleCompiler) matchesAny(col string, values []any) (string, error) {
	var numbers []float64
	var scalars []string
	for _, v := range values {
		switch v := v.(type) {
		case json.Number:
			if f, ok := segment.Number(v); ok {
				numbers = append(numbers, f)
			}
		case string, bool, nil:
			if s, ok := v.(string); ok && heldByNoText(s) {
				continue
			}
			text, err := json.Marshal(v)
			if err != nil {
				return "", err
			}
			scalars = append(scalars, string(text))
		}
	}
	var parts []string
	if len(scalars) == 1 {
		parts = append(parts, fmt.Sprintf("coalesce(%s @> %s::text::jsonb, false)", col, c.arg(scalars[0])))
	} else if len(scalars) > 1 {
		parts = append(parts, fmt.Sprintf("coalesce(%s @> ANY(%s::text[]::jsonb[]), false)", col, c.arg(scalars)))
	}
	if len(numbers) > 0 {
		var eq string
		if len(numbers) == 1 {
			eq = "= " + c.arg(numbers[0]) + "::float8"
		} else {
			eq = "= ANY(" + c.arg(numbers) + "::float8[])"
		}
		parts = append(parts, fmt.Sprintf(`(CASE jsonb_typeof(%[1]s) WHEN 'number' THEN coalesce(%[2]s %[3]s, false)
			WHEN 'array' THEN EXISTS (SELECT 1 FROM jsonb_array_elements(%[1]s) x(e) WHERE %[4]s %[3]s) ELSE false END)`,
			col, c.number(col), eq, c.number("x.e")))
	}
	if len(parts) == 0 {
		return "false", nil
	}
	return "(" + strings.Join(parts, " OR ") + ")", nil
}

// number is col's value as the double ParseFloat reads from its
// decimal, NULL when it is no number or beyond a double's range.
// numeric's float8 refuses a decimal beyond the range (ParseFloat: no
// number) and one that rounds to zero (ParseFloat: zero); both are
// tested on the exact decimal first, past the common case.
func (c *ruleCompiler) number(col string) string {
	if c.overflow == "" {
		c.overflow = c.arg(doubleOverflow) + "::numeric"
		c.underflow = c.arg(doubleUnderflow) + "::numeric"
	}
	n := "(" + col + ")::numeric"
	return fmt.Sprintf(`(CASE WHEN jsonb_typeof(%[1]s) = 'number' THEN CASE
			WHEN abs(%[2]s) BETWEEN 1e-300 AND 1e300 OR %[2]s = 0 THEN %[2]s::float8
			WHEN abs(%[2]s) >= %[3]s THEN NULL WHEN abs(%[2]s) <= %[4]s THEN 0::float8 ELSE %[2]s::float8 END END)`,
		col, n, c.overflow, c.underflow)
}

// doubleOverflow is the least decimal that rounds to infinity as a
// double (the midpoint of the greatest double and 2^1024, which rounds
// to even: up); doubleUnderflow the greatest that rounds to zero (half
// the least double, 2^-1075, rounding to even: down).
var doubleOverflow, doubleUnderflow = func() (string, string) {
	over := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 1024), new(big.Int).Lsh(big.NewInt(1), 970))
	// 2^-1075 = 5^1075 / 10^1075: 1075 digits after the point.
	digits := new(big.Int).Exp(big.NewInt(5), big.NewInt(1075), nil).String()
	under := "0." + strings.Repeat("0", 1075-len(digits)) + digits
	return over.String(), under
}()

// folded is the SQL of the text s folded as segment.Fold folds it.
func (c *ruleCompiler) folded(s string) string {
	if c.fold[0] == "" {
		from, to := foldTable()
		c.fold = [2]string{c.arg(from), c.arg(to)}
	}
	return fmt.Sprintf(`(CASE WHEN octet_length(%[1]s) = length(%[1]s) THEN lower(%[1]s COLLATE "C")
			ELSE translate(lower(%[1]s COLLATE "C"), %[2]s::text, %[3]s::text) END)`, s, c.fold[0], c.fold[1])
}

// foldTable is every letter beyond ASCII that unicode.ToLower changes,
// and what it changes them to: strings.ToLower maps a string beyond
// ASCII rune by rune with unicode.ToLower.
var foldTable = sync.OnceValues(func() (string, string) {
	var from, to strings.Builder
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if l := unicode.ToLower(r); l != r {
			from.WriteRune(r)
			to.WriteRune(l)
		}
	}
	return from.String(), to.String()
})

// instantSQL is the SQL of the instant the text s is as instant reads it
// (timestamptz), when s is in one of the forms read here with a valid
// day and time; NULL otherwise.
func instantSQL(s string) string {
	date := fmt.Sprintf(`(CASE WHEN substr(%[1]s, 1, 4)::int >= 1 AND substr(%[1]s, 6, 2)::int BETWEEN 1 AND 12
			AND substr(%[1]s, 9, 2)::int BETWEEN 1 AND (CASE substr(%[1]s, 6, 2)::int WHEN 2 THEN
				CASE WHEN substr(%[1]s, 1, 4)::int %% 4 = 0 AND (substr(%[1]s, 1, 4)::int %% 100 <> 0 OR substr(%[1]s, 1, 4)::int %% 400 = 0) THEN 29 ELSE 28 END
				WHEN 4 THEN 30 WHEN 6 THEN 30 WHEN 9 THEN 30 WHEN 11 THEN 30 ELSE 31 END)
			AND (CASE WHEN length(%[1]s) = 10 THEN true ELSE substr(%[1]s, 12, 2)::int <= 23 AND substr(%[1]s, 15, 2)::int <= 59
				AND substr(%[1]s, 18, 2)::int <= 59 END) THEN true ELSE false END)`, s)
	local := `(replace(substr(%[1]s, 1, %[2]s), 'T', ' ')::timestamp AT TIME ZONE 'UTC')`
	return fmt.Sprintf(`(CASE WHEN %[1]s ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?)?$' THEN
			CASE WHEN %[2]s THEN %[3]s END
		WHEN %[1]s ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$' THEN
			CASE WHEN %[2]s THEN %[4]s END
		WHEN %[1]s ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?[+-][0-9]{2}:[0-9]{2}$' THEN
			CASE WHEN %[2]s AND substr(right(%[1]s, 5), 1, 2)::int <= 23 AND substr(right(%[1]s, 5), 4, 2)::int <= 59 THEN %[5]s
				- (CASE left(right(%[1]s, 6), 1) WHEN '-' THEN -1 ELSE 1 END) * right(%[1]s, 5)::interval END
		END)`,
		s, date,
		fmt.Sprintf(local, s, "length("+s+")"),
		fmt.Sprintf(local, s, "length("+s+") - 1"),
		fmt.Sprintf(local, s, "length("+s+") - 6"))
}

// floorMicro is t rounded down to the microsecond; ceilMicro up.
func floorMicro(t time.Time) time.Time {
	return t.Truncate(time.Microsecond)
}

func ceilMicro(t time.Time) time.Time {
	if f := t.Truncate(time.Microsecond); !f.Equal(t) {
		return f.Add(time.Microsecond)
	}
	return t
}
