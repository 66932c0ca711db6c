package systemtest_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestNumericMatchesServer proves values.Numeric against the real server:
// over edge cases at every limit and random numbers around them, the
// check accepts exactly the JSON numbers PostgreSQL stores in jsonb (and
// as numeric), and says how long the text the server prints for each is.
func TestNumericMatchesServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgtest.NewPool(t).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// One round trip for every number: a failing cast is caught per number
	// and its SQLSTATE returned.
	if _, err := conn.Exec(ctx, `CREATE FUNCTION pg_temp.stored(n text, OUT len int, OUT numeric_ok bool, OUT state text)
		LANGUAGE plpgsql AS $$
		BEGIN
			len := length(n::jsonb::text);
			numeric_ok := length(n::numeric::text) = len;
		EXCEPTION WHEN others THEN
			len := -1;
			state := SQLSTATE;
			BEGIN
				PERFORM n::numeric;
				numeric_ok := true;
			EXCEPTION WHEN others THEN
				numeric_ok := false;
			END;
		END $$`); err != nil {
		t.Fatal(err)
	}

	nines := func(n int) string { return strings.Repeat("9", n) }
	zeros := func(n int) string { return strings.Repeat("0", n) }
	numbers := []string{
		"0", "-0", "-0.0", "1", "-1", "0.5", "123.456", "1e5", "1E5", "1e+5", "1e-5", "-1.5e-3",
		// Digits before the point.
		"1" + zeros(131071), "1" + zeros(131072), nines(131072), "-" + nines(131072), nines(131073),
		"1e131071", "1e131072", "9.9e131071", "-9.99e131071", "1e+131071", "1E131072",
		"100e131069", "100e131070", "0.0001e131075", "0.0001e131076", "0.00012e131075",
		// Digits after the point (scale), trailing zeros count.
		"1e-16383", "1e-16384", "1.5e-16383", "-1e-16383", "0.5e-16382", "0.5e-16383",
		"0." + zeros(16382) + "1", "0." + zeros(16383) + "1", "1." + zeros(16383), "1." + zeros(20000),
		"1." + zeros(20000) + "e20000", "1." + zeros(20000) + "e3617", "1." + zeros(20000) + "e3616",
		"12e-16383", "1200e-16385", "1" + zeros(10) + "e-16393",
		// Zero with any exponent: only the scale and the exponent's bound count.
		"0e999999", "0e-16383", "0e-16384", "0.0e-16382", "0.0e-16383", "-0e5",
		"0e1073741822", "0e1073741823", "0e-1073741822", "0e+1073741822", "0e0001073741822",
		"0e99999999999999999999", "0e-99999999999999999999", "0e" + zeros(40) + "5",
		"1e1073741822", "1e-1073741823", "1e2147483647", "1e-2147483648",
		// Huge mantissas.
		"0." + zeros(16000) + nines(383), "0." + zeros(16000) + nines(384),
		nines(131072) + "." + nines(16383), nines(131072) + "." + nines(16384),
		nines(1000) + "e130072", nines(1000) + "e130073", nines(1000) + "e-15383", nines(1000) + "e-15384",
	}
	r := rand.New(rand.NewPCG(11, 12))
	digits := func(n int, lead bool) string {
		var b strings.Builder
		for i := range n {
			d := r.IntN(10)
			if i == 0 && lead && d == 0 {
				d = 1 + r.IntN(9)
			}
			b.WriteByte(byte('0' + d))
		}
		return b.String()
	}
	near := func(limits ...int) int {
		l := limits[r.IntN(len(limits))]
		return max(0, l+r.IntN(9)-4)
	}
	for range 1000 {
		var b strings.Builder
		if r.IntN(3) == 0 {
			b.WriteByte('-')
		}
		switch r.IntN(4) {
		case 0:
			b.WriteString("0")
		case 1:
			b.WriteString(digits(1+r.IntN(5), true))
		default:
			b.WriteString(digits(max(1, near(1, 3, 131072, 131068)), true))
		}
		if r.IntN(2) == 0 {
			b.WriteByte('.')
			if r.IntN(4) == 0 {
				b.WriteString(zeros(near(2, 16382, 16000)))
			}
			b.WriteString(digits(max(1, near(1, 2, 16383, 383, 3616)), false))
		}
		if r.IntN(3) > 0 {
			b.WriteString([]string{"e", "E"}[r.IntN(2)])
			b.WriteString([]string{"", "+", "-"}[r.IntN(3)])
			if r.IntN(10) == 0 {
				b.WriteString(zeros(r.IntN(20)))
			}
			b.WriteString(strconv.Itoa(near(0, 5, 16383, 16384, 131071, 131072, 114688, 1073741822, 1<<31)))
		}
		numbers = append(numbers, b.String())
	}

	rows, err := conn.Query(ctx, `SELECT (pg_temp.stored(n)).* FROM unnest($1::text[]) WITH ORDINALITY AS x(n, i) ORDER BY i`, numbers)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	accepted, refused, mismatches := 0, 0, 0
	for i := 0; rows.Next(); i++ {
		var (
			length    int
			numericOK bool
			state     *string
		)
		if err := rows.Scan(&length, &numericOK, &state); err != nil {
			t.Fatal(err)
		}
		n := numbers[i]
		short := n
		if len(short) > 40 {
			short = short[:20] + "..." + short[len(short)-20:] + " (" + strconv.Itoa(len(n)) + " characters)"
		}
		serverOK := length >= 0
		if serverOK != numericOK {
			t.Errorf("%s: jsonb %v, numeric %v: the two disagree", short, serverOK, numericOK)
		}
		if !serverOK && *state != "22003" {
			t.Errorf("%s: refused with SQLSTATE %s, not as out of range (22003)", short, *state)
		}
		printed, reason := values.Numeric(n)
		switch {
		case serverOK != (reason == ""):
			mismatches++
			if mismatches <= 20 {
				t.Errorf("%s: the server stores it: %v; the check: %q", short, serverOK, reason)
			}
		case serverOK && printed != length:
			t.Errorf("%s: printed as %d characters, the check says %d", short, length, printed)
		}
		if serverOK {
			accepted++
		} else {
			refused++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d numbers: %d stored, %d refused by the server; %d disagreements", len(numbers), accepted, refused, mismatches)
	if accepted < len(numbers)/5 || refused < len(numbers)/5 {
		t.Errorf("the random numbers do not straddle the limits: %d stored, %d refused", accepted, refused)
	}
}
