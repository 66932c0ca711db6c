package esdbtest_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/clientele/clientele/eventstore/esdb/esdbtest"
)

// TestProtocol drives the stand-in with the real client, through the
// calls and answers the adapter relies on.
func TestProtocol(t *testing.T) {
	srv, err := esdbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfg, err := esdb.ParseConnectionString(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = esdb.NoopLogging()
	client, err := esdb.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := t.Context()
	ev := func(data string) esdb.EventData {
		return esdb.EventData{EventType: "T", ContentType: esdb.ContentTypeJson, Data: []byte(data)}
	}
	code := func(err error) esdb.ErrorCode {
		var e *esdb.Error
		if !errors.As(err, &e) {
			t.Fatalf("error %v is not an *esdb.Error", err)
		}
		return e.Code()
	}
	read := func(stream string, opts esdb.ReadStreamOptions, count uint64) ([]string, error) {
		rs, err := client.ReadStream(ctx, stream, opts, count)
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		var out []string
		for {
			e, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return out, err
			}
			out = append(out, string(e.Event.Data))
		}
	}

	// The handshake: the client asked for the server's features.
	if v, err := client.GetServerVersion(); err != nil || *v != (esdb.ServerVersion{Minor: 1}) {
		t.Errorf("server version = %v, %v; want 0.1.0 from the handshake", v, err)
	}

	before := time.Now().Add(-time.Millisecond)
	res, err := client.AppendToStream(ctx, "s", esdb.AppendToStreamOptions{ExpectedRevision: esdb.NoStream{}}, ev(`1`), ev(`2`))
	if err != nil || res.NextExpectedVersion != 1 {
		t.Fatalf("first append = %+v, %v; want revision 1", res, err)
	}
	for _, exp := range []esdb.ExpectedRevision{esdb.NoStream{}, esdb.Revision(0), esdb.Revision(2)} {
		if _, err := client.AppendToStream(ctx, "s", esdb.AppendToStreamOptions{ExpectedRevision: exp}, ev(`9`)); code(err) != esdb.ErrorCodeWrongExpectedVersion {
			t.Errorf("append expecting %#v = %v, want a wrong expected version", exp, err)
		}
	}
	if _, err := client.AppendToStream(ctx, "t", esdb.AppendToStreamOptions{ExpectedRevision: esdb.StreamExists{}}, ev(`9`)); code(err) != esdb.ErrorCodeWrongExpectedVersion {
		t.Errorf("append to a new stream expecting it exists = %v, want a wrong expected version", err)
	}
	if res, err = client.AppendToStream(ctx, "s", esdb.AppendToStreamOptions{ExpectedRevision: esdb.Revision(1)}, ev(`3`)); err != nil || res.NextExpectedVersion != 2 {
		t.Fatalf("append at revision 1 = %+v, %v; want revision 2", res, err)
	}

	got, err := read("s", esdb.ReadStreamOptions{From: esdb.Revision(1)}, 10)
	if err != nil || strings.Join(got, ",") != "2,3" {
		t.Errorf("read from revision 1 = %v, %v; want 2,3", got, err)
	}
	if got, err = read("s", esdb.ReadStreamOptions{From: esdb.End{}, Direction: esdb.Backwards}, 1); err != nil || strings.Join(got, ",") != "3" {
		t.Errorf("read backwards from the end = %v, %v; want 3", got, err)
	}
	if got, err = read("s", esdb.ReadStreamOptions{From: esdb.Revision(3)}, 10); err != nil || len(got) != 0 {
		t.Errorf("read past the end = %v, %v; want nothing", got, err)
	}
	if _, err = read("none", esdb.ReadStreamOptions{From: esdb.Start{}}, 10); code(err) != esdb.ErrorCodeResourceNotFound {
		t.Errorf("read of a missing stream = %v, want not found", err)
	}
	rs, err := client.ReadStream(ctx, "s", esdb.ReadStreamOptions{From: esdb.Start{}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := rs.Recv()
	rs.Close()
	if err != nil || e.Event.EventNumber != 0 || e.Event.EventType != "T" || e.Event.CreatedDate.Before(before) || e.Event.CreatedDate.After(time.Now()) {
		t.Errorf("first event = %+v, %v", e, err)
	}

	big := esdb.EventData{EventType: "T", ContentType: esdb.ContentTypeBinary, Data: make([]byte, esdbtest.DefaultMaxAppendSize+1)}
	if _, err := client.AppendToStream(ctx, "s", esdb.AppendToStreamOptions{ExpectedRevision: esdb.Any{}}, big); err == nil {
		t.Error("an append above the maximum append size succeeded")
	}
	if got, err = read("s", esdb.ReadStreamOptions{From: esdb.Start{}}, 10); err != nil || len(got) != 3 {
		t.Errorf("after a refused append the stream has %v, %v; want 3 events", got, err)
	}
}
