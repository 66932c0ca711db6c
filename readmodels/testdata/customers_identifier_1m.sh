#!/bin/sh
# Times the containment (before 00030) and the index-backed (after) form of
# a customer retrieval by identifier, 3 runs each, on the data of
# customers_identifier_1m.sql. Arguments: psql's connection options.
P="psql $* -At"
tok=$($P -c "SELECT doc->>'customer_token' FROM customers WHERE company_id='company-big' ORDER BY customer_id OFFSET 250000 LIMIT 1")
for fv in "email|person500000@example.com" "phone_number|+31610500002" "external_id|ext-999999" "customer_token|$tok" "email|nobody@example.com"; do
  f=${fv%%|*}; v=${fv#*|}
  old="SELECT customer_id::text AS page_cursor, doc FROM customers WHERE company_id = 'company-big' AND customer_id > '' AND NOT is_deleted AND (doc @> '{\"$f\": \"$v\"}'::jsonb OR doc @> '{\"$f\": [\"$v\"]}'::jsonb) ORDER BY customer_id LIMIT 101"
  new="SELECT customer_id::text AS page_cursor, doc FROM customers WHERE company_id = 'company-big' AND customer_id > '' AND NOT is_deleted AND doc ->> '$f' = '$v' ORDER BY customer_id LIMIT 101"
  for form in old new; do
    eval q=\$$form
    ts=""
    for i in 1 2 3; do ts="$ts $($P -c "EXPLAIN (ANALYZE, FORMAT JSON) $q" | grep -o '"Execution Time": [0-9.]*' | grep -o '[0-9.]*$')"; done
    echo "$f=$v $form:$ts ms"
  done
done
