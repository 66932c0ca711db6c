package api

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestLimiterRefillsAndEvicts(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(1, 2, func() time.Time { return now })
	if l.idle != time.Minute {
		t.Fatalf("idle %v, want the minimum of a minute", l.idle)
	}
	for i := range 2 {
		if ok, _ := l.allow("a"); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	ok, wait := l.allow("a")
	if ok || wait != time.Second {
		t.Fatalf("over the burst: ok %v, wait %v; want refused, 1s", ok, wait)
	}
	// A refused request takes nothing: one second later one is allowed.
	now = now.Add(time.Second)
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("refused after refilling")
	}
	l.allow("b")
	if n := l.size(); n != 2 {
		t.Fatalf("%d buckets, want 2", n)
	}
	// Idle buckets are dropped by the next request after the idle period.
	now = now.Add(time.Minute)
	l.allow("c")
	if n := l.size(); n != 1 {
		t.Fatalf("%d buckets after the idle period, want 1", n)
	}
}

func TestLimiterDisabled(t *testing.T) {
	l := newLimiter(math.Inf(1), 0, time.Now)
	for range 1000 {
		if ok, _ := l.allow("a"); !ok {
			t.Fatal("refused with an infinite limit")
		}
	}
	if n := l.size(); n != 0 {
		t.Fatalf("%d buckets kept with an infinite limit", n)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	err := Config{MaxBodyBytes: -1, RateLimit: -1, RateBurst: -1, BaseDomain: "http://x"}.Validate()
	if err == nil {
		t.Fatal("invalid Config accepted")
	}
	for _, want := range []string{"MaxBodyBytes", "RateLimit", "RateBurst", "BaseDomain"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %s", err, want)
		}
	}
}

func TestLimiterGiveBack(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(1.0/60, 2, func() time.Time { return now }) // one a minute
	_, _, first := l.take("a")
	now = now.Add(time.Second)
	if ok, _, _ := l.take("a"); !ok {
		t.Fatal("second take refused within the burst")
	}
	if ok, _ := l.allow("a"); ok {
		t.Fatal("third take allowed over the burst")
	}
	// An attempt that did not count, given back later, frees its token,
	// and only its token.
	now = now.Add(time.Second)
	first()
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("refused after a token was given back")
	}
	if ok, _ := l.allow("a"); ok {
		t.Fatal("allowed twice after one token was given back")
	}
}

func TestLimiterBounded(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(1, 2, func() time.Time { return now })
	l.maxKeys = 3
	for _, k := range []string{"a", "b", "c"} {
		if ok, _ := l.allow(k); !ok {
			t.Fatalf("key %s refused below the bound", k)
		}
	}
	ok, wait := l.allow("d")
	if ok || wait <= 0 || wait > l.idle {
		t.Fatalf("new key in a full table: ok %v, wait %v; want refused within %v", ok, wait, l.idle)
	}
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("a known key is refused when the table is full")
	}
	if n := l.size(); n != 3 {
		t.Fatalf("%d buckets, want the bound of 3", n)
	}
	// Once the old buckets have been idle long enough, room is made.
	now = now.Add(l.idle)
	if ok, _ := l.allow("d"); !ok {
		t.Fatal("new key refused after the sweep")
	}
}

func TestAddressKey(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.7":          "203.0.113.7",
		"::ffff:203.0.113.7":   "203.0.113.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"fe80::1%eth0":         "fe80::/64",
		"":                     "",
	} {
		if got := addressKey(in); got != want {
			t.Errorf("addressKey(%q) = %q, want %q", in, got, want)
		}
	}
}
