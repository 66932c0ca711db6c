package bus_test

import (
	"context"
	"github.com/clientele/clientele/internal/testlog"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg"
)

// TestConsumerOutlivesTheDatabase starts a consumer while its database
// is down (watermill-sql subscribes with a statement, and a router whose
// handler cannot subscribe stops for good), and crashes the database
// again under the running consumer: RunRouter must not return, must read
// not running until its handler subscribed, and must consume once the
// database is back, logging each outage once rather than at every poll.
func TestConsumerOutlivesTheDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a private PostgreSQL server")
	}
	ctx := context.Background()
	srv, pool, store := privateStore(t)
	logs := &testlog.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	transport, err := bus.NewPostgres(pool, bus.PostgresConfig{PollInterval: 10 * time.Millisecond, RetryInterval: 50 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan bus.CommitHeader, 10)
	router, err := message.NewRouter(message.RouterConfig{}, watermill.NopLogger{})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := transport.Subscriber("outage")
	if err != nil {
		t.Fatal(err)
	}
	router.AddNoPublisherHandler("outage", bus.CommitsTopic, sub, func(msg *message.Message) error {
		h, err := bus.ParseCommitHeader(msg.Payload)
		if err == nil {
			got <- h
		}
		return err
	})
	// appendCommit retries an append until the database takes it: the pool's
	// idle connections died with the server.
	appendCommit := func(stream string) uint64 {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			c, err := store.Append(ctx, commit("acme", stream, 1))
			if err == nil {
				return c.TxID
			}
			if !pg.Transient(err) || time.Now().After(deadline) {
				t.Fatalf("append: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	receive := func(tx uint64) {
		t.Helper()
		timeout := time.After(time.Minute) // an upper bound against a hang
		for {
			select {
			case h := <-got:
				if h.TxID == tx {
					return
				}
			case <-timeout:
				t.Fatalf("commit %d not consumed", tx)
			}
		}
	}

	srv.Crash()
	var l bus.Lifecycle
	runCtx, end, err := l.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer end()
		done <- bus.RunRouter(runCtx, &l, router)
	}()
	// It waits while the database is down...
	waitLog := func(line string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), line); {
			select {
			case err := <-done:
				t.Fatalf("RunRouter returned while the database was down: %v", err)
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", line, logs.String())
			}
		}
	}
	waitLog("cannot subscribe: the database is unavailable")
	if l.Running() {
		t.Error("running while its handler could not subscribe")
	}
	// ...and consumes once it is back.
	srv.Start()
	receive(appendCommit("tick-acme-1"))
	if !l.Running() {
		t.Error("not running while consuming")
	}

	// Under a running router, the subscriber waits out a crash by itself.
	srv.Crash()
	waitLog("the subscriber cannot read messages")
	srv.Start()
	receive(appendCommit("tick-acme-2"))
	select {
	case err := <-done:
		t.Fatalf("RunRouter returned: %v", err)
	default:
	}
	waitLog("the subscriber reads messages again")
	if n := strings.Count(logs.String(), "the subscriber cannot read messages"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, logs.String())
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("RunRouter after Close: %v", err)
	}
}
