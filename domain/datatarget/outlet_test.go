package datatarget_test

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

func TestNewOutlet(t *testing.T) {
	d, _ := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "dt"}, now)
	o, err := datatarget.NewOutlet(staff, d, "o1", datatarget.OutletSpec{
		Type: "webhook", IsBatched: true, MinRequestInterval: 250,
		Request: datatarget.Request{URL: "https://example.com/hook", Method: "post"},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxBatchSize != 100 || o.Request.Method != "POST" || o.Request.Format != "json" ||
		string(o.Request.Content) != `"{(data)}"` || o.MinRequestInterval != 250*time.Millisecond || !o.Enabled {
		t.Errorf("outlet %+v", o)
	}
	o, _ = datatarget.NewOutlet(staff, d, "o2", datatarget.OutletSpec{Type: "webhook", Request: datatarget.Request{URL: "http://example.com"}}, now)
	if o.MaxBatchSize != 1 {
		t.Errorf("unbatched max_batch_size %d", o.MaxBatchSize)
	}

	tests := []struct {
		name string
		spec datatarget.OutletSpec
		want []string
	}{
		{"everything wrong", datatarget.OutletSpec{Type: "email", MinRequestInterval: -1, Secret: "nope",
			Request: datatarget.Request{URL: "ftp://x", Method: "GET", Format: "xml", Content: json.RawMessage(`{`),
				Headers: map[string]string{"Content-Length": "1", "Bad Name": "x", "X-Ok": "a\nb"}}},
			[]string{"min_request_interval", "outlet_type", "request.content", "request.format", "request.headers.Bad Name",
				"request.headers.Content-Length", "request.headers.X-Ok", "request.method", "request.url", "secret"}},
		{"no url", datatarget.OutletSpec{Type: "webhook"}, []string{"request.url"}},
		{"relative url", datatarget.OutletSpec{Type: "webhook", Request: datatarget.Request{URL: "/hook"}}, []string{"request.url"}},
		{"signature header", datatarget.OutletSpec{Type: "webhook", Request: datatarget.Request{URL: "http://x",
			Headers: map[string]string{"Webhook-Signature": "x"}}}, []string{"request.headers.Webhook-Signature"}},
		{"short secret", datatarget.OutletSpec{Type: "webhook", Secret: "whsec_c2hvcnQ=", Request: datatarget.Request{URL: "http://x"}}, []string{"secret"}},
	}
	for _, tt := range tests {
		_, err := datatarget.NewOutlet(staff, d, "o", tt.spec, now)
		got := fields(err)
		sort.Strings(got)
		if code(err) != domain.Validation || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %v, fields %v, want %v", tt.name, err, got, tt.want)
		}
	}
	if _, err := datatarget.NewOutlet(bare, d, "o", datatarget.OutletSpec{Type: "webhook", Request: datatarget.Request{URL: "http://x"}}, now); code(err) != domain.Forbidden {
		t.Errorf("no role: %v", err)
	}
	good := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	if _, err := datatarget.NewOutlet(staff, d, "o", datatarget.OutletSpec{Type: "webhook", Secret: good, Request: datatarget.Request{URL: "http://x"}}, now); err != nil {
		t.Errorf("good secret: %v", err)
	}
}
