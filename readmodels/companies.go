// Package readmodels answers queries from the read-model tables that the
// projectors keep. It only reads: what writes (the commands, the
// projectors, authentication's state in package authn) lives elsewhere.
package readmodels

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/company"
)

// Companies finds companies by host, slug or id.
type Companies struct {
	db         database
	baseDomain string
}

// NewCompanies returns the queries on pool. baseDomain is the domain under
// which companies have their hosts, <slug>.<baseDomain>; it may be empty
// when companies are reached by custom domains only or there is one.
func NewCompanies(pool *pgxpool.Pool, baseDomain string) *Companies {
	if pool == nil {
		panic("readmodels: NewCompanies: nil pool")
	}
	return &Companies{db: database{pool}, baseDomain: normalizeHost(baseDomain)}
}

const selectCompany = `SELECT c.id, c.slug, c.name, c.timezone, c.currency, c.short_name, c.custom_event_types, c.exchange_rates, c.phone_region, c.created_at,
	ARRAY(SELECT d.domain FROM company_domains d WHERE d.company_id = c.id ORDER BY d.domain)
	FROM companies c `

// ByHost returns the company a request's Host header reaches, case- and
// port-insensitively: "<slug>.<base domain>" or a custom domain registered
// for the company. A single-company install maps the bare base domain,
// localhost and IP addresses to its company (every host, when no base
// domain is configured). Anything else is NotFound.
func (q *Companies) ByHost(ctx context.Context, host string) (company.Company, error) {
	h := normalizeHost(host)
	if h == "" {
		return company.Company{}, domain.Errorf(domain.NotFound, "no company at this host")
	}
	slug := ""
	if q.baseDomain != "" {
		if s, ok := strings.CutSuffix(h, "."+q.baseDomain); ok && !strings.Contains(s, ".") {
			slug = s
		}
	}
	// One query: the slug wins over a custom domain, which can only
	// matter for a custom domain under the base domain.
	c, err := q.one(ctx, `WHERE c.slug = $1 OR c.id = (SELECT company_id FROM company_domains WHERE domain = $2)
		ORDER BY c.slug = $1 DESC LIMIT 1`, slug, h)
	if err == nil || domain.ErrorCode(err) != domain.NotFound {
		return c, err
	}
	if q.baseDomain == "" || h == q.baseDomain || h == "localhost" || net.ParseIP(h) != nil {
		return q.single(ctx)
	}
	return company.Company{}, err
}

// single returns the only company, NotFound unless there is exactly one.
func (q *Companies) single(ctx context.Context) (company.Company, error) {
	rows, err := q.db.Query(ctx, selectCompany+`ORDER BY c.id LIMIT 2`)
	if err != nil {
		return company.Company{}, fmt.Errorf("readmodels: companies: %w", err)
	}
	cs, err := pgx.CollectRows(rows, scanCompany)
	if err != nil {
		return company.Company{}, fmt.Errorf("readmodels: companies: %w", err)
	}
	if len(cs) != 1 {
		return company.Company{}, domain.Errorf(domain.NotFound, "no company at this host")
	}
	return cs[0], nil
}

// BySlug returns the company with slug (case-insensitive).
func (q *Companies) BySlug(ctx context.Context, slug string) (company.Company, error) {
	return q.one(ctx, `WHERE c.slug = $1`, strings.ToLower(strings.TrimSpace(slug)))
}

// ByID returns the company with id.
func (q *Companies) ByID(ctx context.Context, id string) (company.Company, error) {
	return q.one(ctx, `WHERE c.id = $1`, id)
}

// List returns every company, by slug.
func (q *Companies) List(ctx context.Context) ([]company.Company, error) {
	rows, err := q.db.Query(ctx, selectCompany+`ORDER BY c.slug`)
	if err != nil {
		return nil, fmt.Errorf("readmodels: companies: %w", err)
	}
	cs, err := pgx.CollectRows(rows, scanCompany)
	if err != nil {
		return nil, fmt.Errorf("readmodels: companies: %w", err)
	}
	return cs, nil
}

func (q *Companies) one(ctx context.Context, where string, args ...any) (company.Company, error) {
	rows, err := q.db.Query(ctx, selectCompany+where, args...)
	if err != nil {
		return company.Company{}, fmt.Errorf("readmodels: companies: %w", err)
	}
	c, err := pgx.CollectExactlyOneRow(rows, scanCompany)
	if errors.Is(err, pgx.ErrNoRows) {
		return company.Company{}, domain.Errorf(domain.NotFound, "no such company")
	}
	if err != nil {
		return company.Company{}, fmt.Errorf("readmodels: companies: %w", err)
	}
	return c, nil
}

func scanCompany(row pgx.CollectableRow) (company.Company, error) {
	var c company.Company
	err := row.Scan(&c.ID, &c.Slug, &c.Name, &c.Timezone, &c.Currency, &c.ShortName, &c.CustomEventTypes, &c.ExchangeRates, &c.PhoneRegion, &c.CreatedAt, &c.Domains)
	c.CreatedAt = c.CreatedAt.UTC()
	if len(c.ExchangeRates) == 0 {
		c.ExchangeRates = nil // as the domain has it: no table is nil
	}
	return c, err
}

// normalizeHost lower-cases a host and drops its port, IPv6 brackets and
// trailing dot.
func normalizeHost(host string) string {
	h := strings.ToLower(strings.TrimSpace(host))
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.TrimSuffix(h, ".")
}
