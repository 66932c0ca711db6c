-- +goose Up
-- may_destroy records, when an upload is staged, whether its principal
-- may delete and forget (the admin role, docs/access.md): the records are
-- applied later by the import worker, which no longer knows who sent them.
-- Runs staged before this migration were accepted without the check and
-- keep that. The default stays true while a rolling upgrade runs: a
-- process of the older version stages runs without naming the column,
-- and they must not lose an admin's deletions; this version always names
-- it.
ALTER TABLE import_runs ADD COLUMN may_destroy boolean NOT NULL DEFAULT true;

-- What the read side derives a sale's total from, kept by the write side
-- (commands/import_sales.go, domain/sale State.Totals and Discount) so
-- that a record making the derived total overflow an int64 is rejected:
-- the totals of the rows not deleted, by row key, and sale_discount.
ALTER TABLE sale_states ADD COLUMN row_totals jsonb  NOT NULL DEFAULT '{}';
ALTER TABLE sale_states ADD COLUMN discount   bigint NOT NULL DEFAULT 0;

-- Filled from the log: each row's last version, and the last change of
-- sale_discount (a null set or an unset removes it).
WITH last_rows AS (
    SELECT DISTINCT ON (e.company_id, e.data->>'sale_external_id', r->>'key')
           e.company_id, e.data->>'sale_external_id' AS external_id, r->>'key' AS key, r->'fields' AS fields
    FROM events e CROSS JOIN LATERAL jsonb_array_elements(e.data->'rows') r
    WHERE e.event_type = 'SaleUpserted' AND jsonb_typeof(e.data->'rows') = 'array'
    ORDER BY e.company_id, e.data->>'sale_external_id', r->>'key', e.stream_version DESC
), totals AS (
    SELECT company_id, external_id, jsonb_object_agg(key, fields->'total') AS row_totals
    FROM last_rows
    WHERE jsonb_typeof(fields->'total') = 'number' AND fields->'is_deleted' IS DISTINCT FROM 'true'::jsonb
    GROUP BY company_id, external_id
)
UPDATE sale_states s SET row_totals = t.row_totals
FROM totals t WHERE s.company_id = t.company_id AND s.external_id = t.external_id;

WITH last_discount AS (
    SELECT DISTINCT ON (company_id, data->>'sale_external_id')
           company_id, data->>'sale_external_id' AS external_id, data->'set'->'sale_discount' AS discount
    FROM events
    WHERE event_type = 'SaleUpserted'
      AND (jsonb_exists(data->'set', 'sale_discount') OR jsonb_exists(data->'unset', 'sale_discount'))
    ORDER BY company_id, data->>'sale_external_id', stream_version DESC
)
UPDATE sale_states s SET discount = (d.discount #>> '{}')::numeric::bigint
FROM last_discount d
WHERE s.company_id = d.company_id AND s.external_id = d.external_id AND jsonb_typeof(d.discount) = 'number';

-- +goose Down
ALTER TABLE sale_states DROP COLUMN discount;
ALTER TABLE sale_states DROP COLUMN row_totals;
ALTER TABLE import_runs DROP COLUMN may_destroy;
