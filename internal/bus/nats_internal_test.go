package bus

import (
	"testing"
	"time"
)

func TestParseNATSURL(t *testing.T) {
	p, err := ParseNATSURL("nats://a:4222, nats://b:4222?ack_wait=5s")
	if err != nil || p != (NATSURL{Servers: "nats://a:4222,nats://b:4222", AckWait: 5 * time.Second}) {
		t.Errorf("got %+v, %v", p, err)
	}
	p, err = ParseNATSURL("nats://a:4222,nats://b:4222,nats://c:4222?replicas=3&ack_wait=5s")
	if err != nil || p != (NATSURL{Servers: "nats://a:4222,nats://b:4222,nats://c:4222", AckWait: 5 * time.Second, Replicas: 3}) {
		t.Errorf("got %+v, %v", p, err)
	}
	for _, bad := range []string{"", "http://a:4222", "nats://", "nats://a:4222/x", "nats://a:4222?ack_wait=-1s", "nats://a:4222?acks=1",
		"nats://a:4222?replicas=0", "nats://a:4222?replicas=6", "nats://a:4222?replicas=three", "nats://a:4222?replicas=-1"} {
		if _, err := ParseNATSURL(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestNATSConfigReplicas: the URL's replicas overrides the field, which
// defaults to 1 and must be 1 to 5.
func TestNATSConfigReplicas(t *testing.T) {
	for _, tc := range []struct {
		url      string
		replicas int
		want     int
	}{{"nats://a:4222", 0, 1}, {"nats://a:4222", 3, 3}, {"nats://a:4222,nats://b:4222,nats://c:4222?replicas=3", 0, 3}, {"nats://a:4222?replicas=5", 1, 5}} {
		c := NATSConfig{URL: tc.url, Replicas: tc.replicas}
		if err := c.setDefaults(); err != nil {
			t.Fatal(err)
		}
		if c.Replicas != tc.want {
			t.Errorf("%q with Replicas %d: %d replicas, want %d", tc.url, tc.replicas, c.Replicas, tc.want)
		}
	}
	for _, bad := range []int{-1, 6} {
		if err := (NATSConfig{URL: "nats://a:4222", Replicas: bad}).Validate(); err == nil {
			t.Errorf("Replicas %d: no error", bad)
		}
	}
}

// TestNATSSubject: a company's messages have a subject of their own, one
// token under the topic whatever the company id holds.
func TestNATSSubject(t *testing.T) {
	for company, want := range map[string]string{
		"0190f0c2-7d3a-7c4e-9f1a-2b3c4d5e6f70": "commits.0190f0c2-7d3a-7c4e-9f1a-2b3c4d5e6f70",
		"":                                     "commits._",
		"a.b>*":                                "commits.x-612e623e2a",
		"x-61":                                 "commits.x-782d3631",
	} {
		if got := natsSubject("commits", company); got != want {
			t.Errorf("natsSubject(%q) = %q, want %q", company, got, want)
		}
	}
}
