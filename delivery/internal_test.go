package delivery

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := map[string]string{
		"127.0.0.1": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
		"10.1.2.3": "private", "172.16.0.1": "private", "192.168.1.1": "private", "fd00::1": "private",
		"169.254.169.254": "link-local", "fe80::1": "link-local",
		"0.0.0.0": "unspecified", "::": "unspecified", "0.1.2.3": "this-network",
		"239.1.1.1": "multicast", "224.0.0.1": "link-local", "ff02::1": "link-local", "ff05::1": "multicast",
		"100.64.0.1": "shared (CGNAT)", "255.255.255.255": "broadcast", "240.0.0.1": "reserved",
		"64:ff9b::7f00:1": "NAT64", "198.18.0.1": "benchmarking",
		"::127.0.0.1": "IPv4-compatible", "::10.0.0.1": "IPv4-compatible", "::8.8.8.8": "IPv4-compatible",
		"::ffff:0:127.0.0.1": "IPv4-translated", "2002:7f00:1::1": "6to4", "2001:0:4136:e378:8000:63bf:3fff:fdd2": "Teredo",
		"2001:2::1": "benchmarking", "fec0::1": "site-local",
		"93.184.216.34": "", "2606:2800:220:1::": "", "100.128.0.1": "", "172.32.0.1": "",
	}
	for addr, want := range tests {
		if got := classify(netip.MustParseAddr(addr)); got != want {
			t.Errorf("classify(%s) = %q, want %q", addr, got, want)
		}
	}
	g := guard{allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	for addr, ok := range map[string]bool{"10.9.9.9": true, "::1": true, "127.0.0.1": false, "192.168.0.1": false, "1.1.1.1": true} {
		if err := g.check(netip.MustParseAddr(addr)); (err == nil) != ok {
			t.Errorf("check(%s) = %v", addr, err)
		}
	}
	if err := g.control("tcp", "[fe80::1%eth0]:80", nil); err == nil {
		t.Error("a zoned link-local address was allowed")
	}
	// An allowed IPv4 network does not allow the IPv6 forms that embed
	// its addresses, but the mapped one, which is the IPv4 address.
	g = guard{allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for addr, ok := range map[string]bool{"127.0.0.1": true, "::ffff:127.0.0.1": true, "::127.0.0.1": false,
		"::ffff:0:127.0.0.1": false, "2002:7f00:1::1": false, "64:ff9b::7f00:1": false} {
		if err := g.control("tcp", net.JoinHostPort(addr, "80"), nil); (err == nil) != ok {
			t.Errorf("control(%s) = %v", addr, err)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := Config{MinBackoff: time.Second, MaxBackoff: time.Hour}
	for attempts, nominal := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 13: time.Hour, 1000: time.Hour} {
		for range 50 {
			d := c.backoff(attempts)
			if d < nominal*8/10 || d > min(nominal*12/10, time.Hour) {
				t.Fatalf("backoff(%d) = %v, nominal %v", attempts, d, nominal)
			}
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		value string
		want  time.Duration
		ok    bool
	}{
		{"", 0, false},
		{"120", 2 * time.Minute, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.value != "" {
			h.Set("Retry-After", tt.value)
		}
		if got, ok := retryAfter(h, now); got != tt.want || ok != tt.ok {
			t.Errorf("Retry-After %q: %v %v, want %v %v", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{LeaseTTL: time.Second, PollInterval: time.Second, MinBackoff: time.Hour, MaxBackoff: time.Second, MaxWorkers: -1}.Validate()
	for _, want := range []string{"Pool is nil", "Disable is nil", "MaxBackoff", "LeaseTTL", "MaxWorkers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v; want a problem with %s", err, want)
		}
	}
}
