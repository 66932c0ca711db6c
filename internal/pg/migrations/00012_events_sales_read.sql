-- +goose Up
-- The read models of events and sales, kept by the async projectors
-- "events" (projections/activity.go) and "sales" (projections/sales.go)
-- and read by GET /api/data/events/ and GET /api/data/sales/
-- (readmodels/events.go, readmodels/sales.go). Disposable: a rebuild
-- replays the log into copies, so no foreign keys, triggers or serials.
--
-- Both docs hold personal data in clear (opened from the events' sealed
-- part with the customer's data key). Forgetting a customer removes it
-- from every row of the customer, found by customer_id (Clientele's id of
-- the customer, which says nothing about the person); the rows stay.

-- The Event entity of the interface (package activity). The log's own
-- table is called events, hence activity_events.
CREATE TABLE activity_events (
    company_id  text        NOT NULL,
    -- The event's integer id, given by the write side in import order:
    -- retrieval pages by it, numerically.
    event_id    bigint      NOT NULL,
    customer_id text        NOT NULL,
    -- doc is the event exactly as retrieval answers it.
    doc         jsonb       NOT NULL,
    -- Deleted events (EventDeleted) are kept, and left out of retrieval.
    is_deleted  boolean     NOT NULL DEFAULT false,
    -- The version of the company's activity stream last applied to the
    -- row: a replayed event is skipped.
    version     bigint      NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (company_id, event_id)
);
-- Forgetting a customer rewrites its events.
CREATE INDEX activity_events_customer ON activity_events (company_id, customer_id);
-- Equality filters are containment (doc @> ...), which jsonb_path_ops indexes.
CREATE INDEX activity_events_doc ON activity_events USING gin (doc jsonb_path_ops);

-- Sales: one row per transaction (sale_external_id).
CREATE TABLE sales (
    company_id  text        NOT NULL,
    -- UUIDv7: retrieval pages in creation order by the primary key.
    sale_id     text        NOT NULL,
    customer_id text        NOT NULL,
    -- doc is the transaction exactly as retrieval answers it: its sale_*
    -- fields, "sale_rows" (the rows not deleted, in order) and
    -- "sale_total" (given, or computed from the rows).
    doc         jsonb       NOT NULL,
    -- What re-applying a later change needs besides doc: every row with
    -- its key, deleted ones included (sale.Row: key, product_id, fields),
    -- and whether sale_total was given (else the rows compute it).
    keyed_rows  jsonb       NOT NULL DEFAULT '[]',
    total_given boolean     NOT NULL DEFAULT false,
    -- doc's sale_is_deleted: deleted sales are left out of retrieval.
    is_deleted  boolean     NOT NULL DEFAULT false,
    -- For statistics: doc's sale_state; counted is neither deleted nor in
    -- an uncounted state (CANCELLED, CLOSED); revenue is sale_total when
    -- counted, else 0 (minor units of the company's currency).
    state       text        NOT NULL,
    counted     boolean     NOT NULL,
    revenue     bigint      NOT NULL,
    sale_date   timestamptz,
    -- The last version of the sale's stream applied.
    version     bigint      NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (company_id, sale_id)
);
CREATE INDEX sales_customer ON sales (company_id, customer_id);
CREATE INDEX sales_doc ON sales USING gin (doc jsonb_path_ops);

-- The datasync feed of events (projections/datasync_events.go) finds the
-- EventRecorded of a deleted event by company and id, in the log: the
-- activity stream of a company is long, and datasync must not read
-- another projection's tables. Partial, so only those events pay for it.
CREATE INDEX events_activity_id ON events (company_id, (data->'id')) WHERE event_type = 'EventRecorded';

-- +goose Down
DROP INDEX events_activity_id;
DROP TABLE sales;
DROP TABLE activity_events;
