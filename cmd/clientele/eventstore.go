package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	esdbclient "github.com/EventStore/EventStore-Client-Go/v4/esdb"
)

// errESDBServe is why serve refuses --event-store esdb://: the adapter
// (eventstore/esdb) implements the port, but the rest of the service still
// depends on the PostgreSQL log beyond it (docs/architecture.md, "The
// EventStoreDB adapter").
var errESDBServe = errors.New("--event-store: serve cannot run on EventStoreDB yet. " +
	"The adapter (eventstore/esdb) implements the event store port, but the service still needs the PostgreSQL log: " +
	"inline projections and commit announcements run inside the append transaction, " +
	"imports and customer tokens append in the transaction of their write-side state (AppendTx), " +
	"and the projections read the log with SQL (catch-up, rebuild, status, data sync). " +
	"Leave --event-store unset (or postgres); see docs/architecture.md, \"The EventStoreDB adapter\"")

// checkEventStore checks the --event-store setting: empty or "postgres"
// is the PostgreSQL log of --database-url; an esdb:// or esdb+discover://
// connection string is EventStoreDB, checked and refused (errESDBServe).
// The connection string is never echoed: it may hold a password.
func checkEventStore(v string) error {
	switch {
	case v == "" || v == "postgres":
		return nil
	case strings.HasPrefix(v, "esdb://") || strings.HasPrefix(v, "esdb+discover://"):
		if _, err := url.Parse(v); err != nil {
			// url.Parse's error quotes the string: say less.
			return errors.New("--event-store: not a valid EventStoreDB connection string: not a URL")
		}
		if _, err := esdbclient.ParseConnectionString(v); err != nil {
			return fmt.Errorf("--event-store: not a valid EventStoreDB connection string: %w", err)
		}
		return errESDBServe
	}
	return errors.New("--event-store: want postgres or an EventStoreDB connection string (esdb://host:2113?tls=false, esdb+discover://...)")
}
