package secret_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/clientele/clientele/internal/secret"
)

func TestPassword(t *testing.T) {
	h, err := secret.HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$") {
		t.Errorf("hash %q is not argon2id", h)
	}
	h2, _ := secret.HashPassword("correct horse battery")
	if h == h2 {
		t.Error("two hashes of one password are equal: no salt?")
	}
	tests := []struct {
		password, hash string
		want           bool
	}{
		{"correct horse battery", h, true},
		{"correct horse batterY", h, false},
		{"", h, false},
		{"correct horse battery", "", false},
		{"correct horse battery", "garbage", false},
	}
	for _, tt := range tests {
		if got := secret.CheckPassword(tt.password, tt.hash); got != tt.want {
			t.Errorf("CheckPassword(%q, %.12q) = %v", tt.password, tt.hash, got)
		}
	}
}

func TestHashToken(t *testing.T) {
	// sha256("abc")
	if got := secret.HashToken("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashToken(abc) = %s", got)
	}
}

func TestTOTP(t *testing.T) {
	s, uri, err := secret.NewTOTP("Clientele", "ann@example.com (acme)")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "otpauth" || u.Host != "totp" || u.Query().Get("secret") != s || u.Query().Get("issuer") != "Clientele" {
		t.Errorf("uri %q: %v", uri, err)
	}
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	step := now.Unix() / 30
	for _, tt := range []struct {
		at   time.Time
		want int64 // the step matched; 0 for none
	}{
		{now, step},
		{now.Add(-30 * time.Second), step - 1}, // one period of drift
		{now.Add(30 * time.Second), step + 1},
		{now.Add(-90 * time.Second), 0},
		{now.Add(5 * time.Minute), 0},
	} {
		code, err := totp.GenerateCode(s, tt.at)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := secret.TOTPStep(code, s, now)
		if !ok {
			got = 0
		}
		if got != tt.want {
			t.Errorf("code of %v checked at %v: step %d, want %d", tt.at, now, got, tt.want)
		}
	}
	for _, bad := range []string{"", "12345", "abcdef", "1234567"} {
		if _, ok := secret.TOTPStep(bad, s, now); ok {
			t.Errorf("TOTPStep(%q) matched", bad)
		}
	}
}
