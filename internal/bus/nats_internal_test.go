package bus

import (
	"testing"
	"time"
)

func TestParseNATSURL(t *testing.T) {
	servers, wait, err := ParseNATSURL("nats://a:4222, nats://b:4222?ack_wait=5s")
	if err != nil || servers != "nats://a:4222,nats://b:4222" || wait != 5*time.Second {
		t.Errorf("got %q, %v, %v", servers, wait, err)
	}
	for _, bad := range []string{"", "http://a:4222", "nats://", "nats://a:4222/x", "nats://a:4222?ack_wait=-1s", "nats://a:4222?acks=1"} {
		if _, _, err := ParseNATSURL(bad); err == nil {
			t.Errorf("%q: no error", bad)
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
