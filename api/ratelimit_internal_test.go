package api

import (
	"fmt"
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

// TestLimiterGiveBackFreesRoom: attempts that do not count leave no
// bucket behind, so however many of them a client sends, with whatever
// emails, the log-in tables stay empty and new keys are allowed.
func TestLimiterGiveBackFreesRoom(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	accounts := newLoginLimiter(loginBurst, loginEvery, clock)
	addrs := newLoginLimiter(addrBurst, addrEvery, clock)
	for i := range loginKeys + 10 {
		// As logIn does: the address, then the account, both given back.
		ok, _, giveAddr := addrs.take("203.0.113.7")
		if !ok {
			t.Fatalf("attempt %d refused by address", i)
		}
		ok, _, giveAccount := accounts.take(fmt.Sprintf("c1/guess%d@example.com", i))
		if !ok {
			t.Fatalf("attempt %d refused by account; %d keys", i, accounts.size())
		}
		giveAccount()
		giveAddr()
		if i%1000 == 0 {
			now = now.Add(time.Millisecond)
		}
	}
	if n, m := accounts.size(), addrs.size(); n != 0 || m != 0 {
		t.Fatalf("%d account and %d address buckets left by attempts that did not count; want none", n, m)
	}
	if ok, _ := accounts.allow("c2/victim@example.com"); !ok {
		t.Fatal("a new key is refused after attempts that did not count")
	}
}

// TestLimiterGiveBackKeepsCount: a give-back that leaves a bucket short
// of its burst (a failure counted before) keeps the bucket and its count,
// and does not drop a newer bucket of the same key.
func TestLimiterGiveBackKeepsCount(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(1.0/60, 2, func() time.Time { return now }) // one a minute
	l.allow("a")                                                // a failure that counts
	_, _, giveBack := l.take("a")
	giveBack()
	if n := l.size(); n != 1 {
		t.Fatalf("%d buckets after giving back to a bucket with a failure, want 1", n)
	}
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("the token given back is not there")
	}
	if ok, _ := l.allow("a"); ok {
		t.Fatal("the failures were forgotten by a give-back")
	}

	// A give-back after the sweep dropped its bucket leaves the key's new
	// bucket, which holds a failure, alone.
	_, _, late := l.take("b")
	now = now.Add(l.idle)
	l.allow("b") // sweeps the old bucket of b, and fails on a new one
	late()
	if ok, _ := l.allow("b"); !ok {
		t.Fatal("b's new bucket lacks its second token")
	}
	if ok, _ := l.allow("b"); ok {
		t.Fatal("a late give-back reset b's new bucket")
	}
}

// TestLoginLimiterFullOfFailures: failures that count still fill the
// table, which then refuses new keys until the sweep frees room.
func TestLoginLimiterFullOfFailures(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLoginLimiter(loginBurst, loginEvery, func() time.Time { return now })
	for i := range loginKeys {
		if ok, _ := l.allow(fmt.Sprintf("c1/guess%d@example.com", i)); !ok {
			t.Fatalf("key %d refused below the bound", i)
		}
	}
	// A give-back to a bucket that holds a failure frees no room.
	_, _, giveBack := l.take("c1/guess0@example.com")
	giveBack()
	if n := l.size(); n != loginKeys {
		t.Fatalf("%d buckets, want the bound of %d", n, loginKeys)
	}
	ok, wait := l.allow("c2/victim@example.com")
	if ok || wait <= 0 || wait > l.idle {
		t.Fatalf("new key in a table full of failures: ok %v, wait %v; want refused within %v", ok, wait, l.idle)
	}
	now = now.Add(l.idle)
	if ok, _ := l.allow("c2/victim@example.com"); !ok {
		t.Fatal("new key refused after the sweep")
	}
	if n := l.size(); n != 1 {
		t.Fatalf("%d buckets after the sweep, want 1", n)
	}
}
