package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/projections/projectors"
)

// readModelTables are the tables of each projection by its name: the
// inline projectors' as they declare them, and the async ones' as theirs
// declare them (Tables() in projections/retrieval, projections/datasync,
// projections/campaignstats and projections/segments; their constructors
// want the database's keyring, so they are written out here). A
// projection named by `clientele projections status` and missing here
// fails the check.
func readModelTables() map[string][]string {
	out := map[string][]string{
		"customers":      {"customers"},
		"shops":          {"shops"},
		"products":       {"products"},
		"events":         {"activity_events"},
		"sales":          {"sales"},
		"datasync":       {"datasync_targets", "datasync_messages"},
		"campaign_stats": {"campaign_stats", "campaign_stats_events", "campaign_stats_members", "campaign_stats_sales", "campaign_stats_conversions", "campaign_stats_products"},
		"segment_members": {"segment_rules", "segment_customers", "segment_activity", "segment_sales",
			"segment_members", "segment_history", "segment_timers", "segment_clock"},
	}
	for _, p := range projectors.Inline() {
		out[p.Name()] = p.Tables()
	}
	return out
}

// rebuildAndCompare rebuilds every projection `clientele projections
// status` lists (`clientele projections rebuild NAME`, with serve
// running) and compares each of its tables, dumped whole and ordered,
// before and after: it returns the projections rebuilt and, for each
// table that differs, its rows found on one side only (a few each).
func rebuildAndCompare(ctx context.Context, c *cluster, problem func(string)) (rebuilt, diffs []string) {
	rows, err := projectionStatus(ctx, c)
	if err != nil {
		problem(err.Error())
		return nil, nil
	}
	pool, err := pgxpool.New(ctx, pg.MultiHostURL(c.primary, c.standby))
	if err != nil {
		problem(err.Error())
		return nil, nil
	}
	defer pool.Close()
	tables := readModelTables()
	for _, r := range rows {
		ts := tables[r.name]
		if len(ts) == 0 {
			problem(fmt.Sprintf("projection %s: the harness does not know its tables", r.name))
			continue
		}
		before, err := dumpTables(ctx, pool, ts)
		if err != nil {
			problem(err.Error())
			continue
		}
		if err := c.command(ctx, "projections", "rebuild", r.name); err != nil {
			problem(err.Error())
			continue
		}
		after, err := dumpTables(ctx, pool, ts)
		if err != nil {
			problem(err.Error())
			continue
		}
		rebuilt = append(rebuilt, r.name)
		for _, t := range ts {
			diffs = append(diffs, compareRows(r.name, t, before[t], after[t])...)
		}
	}
	return rebuilt, diffs
}

// dumpTables reads every row of each table as JSON text, ordered.
func dumpTables(ctx context.Context, pool *pgxpool.Pool, tables []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, t := range tables {
		// As jsonb: a json column's text is compared as the value it
		// holds (its spaces and key order aside).
		rows, err := pool.Query(ctx, fmt.Sprintf(`SELECT row_to_json(t)::jsonb::text AS r FROM %s t ORDER BY r`, t))
		if err != nil {
			return nil, fmt.Errorf("dump %s: %w", t, err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				rows.Close()
				return nil, fmt.Errorf("dump %s: %w", t, err)
			}
			out[t] = append(out[t], s)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("dump %s: %w", t, err)
		}
	}
	return out, nil
}

// compareRows names the rows of table (of projection name) found live
// only or rebuilt only: up to three of each.
func compareRows(name, table string, live, rebuilt []string) []string {
	var out []string
	onlyLive, onlyRebuilt := minus(live, rebuilt), minus(rebuilt, live)
	for i, r := range onlyLive {
		if i == 3 {
			out = append(out, fmt.Sprintf("%s: table %s: %d more rows live only", name, table, len(onlyLive)-3))
			break
		}
		out = append(out, fmt.Sprintf("%s: table %s: live only: %s", name, table, trim([]byte(r))))
	}
	for i, r := range onlyRebuilt {
		if i == 3 {
			out = append(out, fmt.Sprintf("%s: table %s: %d more rows rebuilt only", name, table, len(onlyRebuilt)-3))
			break
		}
		out = append(out, fmt.Sprintf("%s: table %s: rebuilt only: %s", name, table, trim([]byte(r))))
	}
	return out
}

// minus is the rows of a not in b, counting repeats.
func minus(a, b []string) []string {
	left := map[string]int{}
	for _, r := range b {
		left[r]++
	}
	var out []string
	for _, r := range a {
		if left[r] > 0 {
			left[r]--
			continue
		}
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}
