-- +goose Up
-- No GIN index on the documents of the high-volume read models: customers,
-- activity_events and sales. Each written row paid about 17 µs to keep
-- one (20,000 customers inserted in 444 ms with it, 67 ms without; a
-- larger gin_pending_list_limit did not help, fastupdate off was three
-- times worse): a fifth of PostgreSQL's time in an import, for every row,
-- to speed up filtered retrievals, which are rare. A filter is now a scan
-- of the company's rows in primary-key order that stops once a page is
-- full (docs/retrieval.md, "What a filter costs"). The small catalogs
-- (shops_doc, products_doc) keep theirs.
--
-- A rebuild (clientele projections rebuild) copies a table with CREATE
-- TABLE ... (LIKE ... INCLUDING ALL), which names the copied indexes
-- itself (customers_doc_idx, ...): every GIN index of the three tables is
-- dropped, whatever its name.
-- +goose StatementBegin
DO $$
DECLARE
    idx regclass;
BEGIN
    FOR idx IN
        SELECT i.indexrelid::regclass
        FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_am a ON a.oid = c.relam
        WHERE i.indrelid IN ('customers'::regclass, 'activity_events'::regclass, 'sales'::regclass)
          AND a.amname = 'gin'
    LOOP
        EXECUTE format('DROP INDEX %s', idx);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
CREATE INDEX customers_doc ON customers USING gin (doc jsonb_path_ops);
CREATE INDEX activity_events_doc ON activity_events USING gin (doc jsonb_path_ops);
CREATE INDEX sales_doc ON sales USING gin (doc jsonb_path_ops);
