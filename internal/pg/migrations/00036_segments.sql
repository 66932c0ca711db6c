-- +goose Up
-- segments is the read model of segments (projections/segments, inline: a
-- client reads the segment it just created or changed at once). It can be
-- rebuilt from the log: every event of a segment's stream
-- ("segment-<company>-<key>") carries the segment_key, and the change
-- events carry name, description and rule whole.
CREATE TABLE segments (
    company_id  text        NOT NULL,
    segment_key text        NOT NULL,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    rule        jsonb       NOT NULL,
    -- The rule as given, compacted, with its keys in the client's order
    -- (jsonb would sort them): what the answers show.
    rule_text   text        NOT NULL,
    state       text        NOT NULL, -- active | archived
    created_by  text        NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    -- The last version of the segment's stream applied.
    version     bigint      NOT NULL,
    PRIMARY KEY (company_id, segment_key)
);
-- GET /api/segments/ lists a company's segments oldest first.
CREATE INDEX segments_created ON segments (company_id, created_at, segment_key);

-- The membership of segments, a projection of the log
-- (projections/segments.Members, async, "segment_members"); every table
-- below is its own and rebuilt with it. The facts a rule is decided on
-- are kept per customer: its document, its events and its counted
-- sales, each as of the commits applied; and the rules as of them too.
CREATE TABLE segment_rules (
    company_id  text NOT NULL,
    segment_key text NOT NULL,
    rule        text NOT NULL,
    state       text NOT NULL, -- active | archived
    PRIMARY KEY (company_id, segment_key)
);
-- The customer as retrieval shows it (personal data: removed on a
-- forget); no row for a deleted or forgotten customer.
CREATE TABLE segment_customers (
    company_id  text  NOT NULL,
    customer_id text  NOT NULL,
    doc         jsonb NOT NULL,
    PRIMARY KEY (company_id, customer_id)
);
-- The customers' non-deleted events: type, date and clear fields.
CREATE TABLE segment_activity (
    company_id  text        NOT NULL,
    event_id    bigint      NOT NULL,
    customer_id text        NOT NULL,
    type        text        NOT NULL,
    at          timestamptz NOT NULL,
    fields      jsonb       NOT NULL,
    PRIMARY KEY (company_id, event_id)
);
CREATE INDEX segment_activity_customer ON segment_activity (company_id, customer_id);
-- The customers' sales, counted or not (a sale may leave and come back).
CREATE TABLE segment_sales (
    company_id  text        NOT NULL,
    sale_id     text        NOT NULL,
    customer_id text        NOT NULL,
    at          timestamptz,
    revenue     bigint      NOT NULL,
    products    text[]      NOT NULL,
    counted     boolean     NOT NULL,
    PRIMARY KEY (company_id, sale_id)
);
CREATE INDEX segment_sales_customer ON segment_sales (company_id, customer_id);
-- The members now; a plain table other read models (exports) may join.
CREATE TABLE segment_members (
    company_id  text        NOT NULL,
    segment_key text        NOT NULL,
    customer_id text        NOT NULL,
    entered_at  timestamptz NOT NULL,
    PRIMARY KEY (company_id, segment_key, customer_id)
);
CREATE INDEX segment_members_customer ON segment_members (company_id, customer_id);
-- Every entry and exit, at the instant the rule became true or false by
-- the data's own times, with its cause.
CREATE TABLE segment_history (
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    company_id  text        NOT NULL,
    segment_key text        NOT NULL,
    customer_id text        NOT NULL,
    member      boolean     NOT NULL,
    at          timestamptz NOT NULL,
    cause       text        NOT NULL,
    PRIMARY KEY (seq)
);
CREATE INDEX segment_history_segment ON segment_history (company_id, segment_key, at, seq);
-- When each customer's answers next change with no new data: the
-- earliest next-change instant of its rules. The timer reads the due
-- ones by due_at.
CREATE TABLE segment_timers (
    company_id  text        NOT NULL,
    customer_id text        NOT NULL,
    due_at      timestamptz NOT NULL,
    PRIMARY KEY (company_id, customer_id)
);
CREATE INDEX segment_timers_due ON segment_timers (due_at);
-- The time of the last change of the company's data the members reflect:
-- the last commit applied that could move them, or the last timer fired
-- (a segment's computed_at).
-- applied_tx and applied_global are the position of the last commit of
-- the company applied: a timer of the company does not fire while a
-- commit of it dated before the timer's instant waits to be applied.
CREATE TABLE segment_clock (
    company_id     text        NOT NULL PRIMARY KEY,
    computed_at    timestamptz NOT NULL,
    applied_tx     bigint      NOT NULL DEFAULT 0,
    applied_global bigint      NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE segment_clock;
DROP TABLE segment_timers;
DROP TABLE segment_history;
DROP TABLE segment_members;
DROP TABLE segment_sales;
DROP TABLE segment_activity;
DROP TABLE segment_customers;
DROP TABLE segment_rules;
DROP TABLE segments;
