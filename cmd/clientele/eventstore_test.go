package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestServeEventStore checks that serve refuses, before starting anything,
// an event store setting it cannot use, accepts an EventStoreDB connection
// string (then fails here only for the data directory it cannot create),
// and never echoes the connection string.
func TestServeEventStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string // in the error; "" for an accepted setting
	}{
		{"esdb flag", []string{"--event-store", "esdb://admin:s3cret@127.0.0.1:2113?tls=false"}, nil, ""},
		{"esdb env", nil, map[string]string{"CLIENTELE_EVENT_STORE": "esdb+discover://admin:s3cret@cluster.example:2113"}, ""},
		{"bad esdb string", []string{"--event-store", "esdb://admin:s3cret@127.0.0.1:2113?tls=maybe"}, nil, "not a valid EventStoreDB connection string"},
		{"other store", []string{"--event-store", "mysql://admin:s3cret@db"}, nil, "want postgres or an EventStoreDB connection string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			// No --database-url and a data dir that cannot be created: the
			// refusal must come before any database is opened.
			args := append([]string{"serve", "--data-dir", "/dev/null/clientele"}, tt.args...)
			err := run(context.Background(), args, &out, &errOut, env(tt.env))
			if err == nil {
				t.Fatal("serve started")
			}
			if tt.want == "" && strings.Contains(err.Error(), "--event-store") {
				t.Errorf("error %q: the setting was refused", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error()+errOut.String(), "s3cret") {
				t.Errorf("the connection string's password was echoed: %q", err)
			}
		})
	}
}
