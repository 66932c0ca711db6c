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
