-- +goose Up
-- The preview of a segment's rule decides it in one statement over the
-- membership facts (readmodels/segment_sql.go); an event or sales leaf
-- with a window counts each customer's rows of a type, or its counted
-- sales, dated within the last N days. Without these indexes each such
-- leaf read every event, or every sale, of the company (docs/segments.md,
-- "Measured"); with them it reads those of the type within the window
-- alone, from the index (customer_id and revenue are in it).
CREATE INDEX segment_activity_type_at ON segment_activity (company_id, type, at) INCLUDE (customer_id);
CREATE INDEX segment_sales_counted_at ON segment_sales (company_id, at) INCLUDE (customer_id, revenue)
    WHERE counted AND at IS NOT NULL;

-- +goose Down
DROP INDEX segment_sales_counted_at;
DROP INDEX segment_activity_type_at;
