package imports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/dataquery"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/internal/ingest"
)

// RunDataQuery applies an update to every record of a datatype that
// matches (POST /api/data/query/). The update is staged as an import run
// of that datatype, one record per match, so that it follows every rule
// of an import and is applied by the company's one import writer; the
// answer comes once the run is scheduled.
type RunDataQuery struct {
	Principal access.Principal
	Company   company.Company
	Query     dataquery.Query
}

// DataQueryResult is the answer: the records matched, the records the
// update was scheduled for (the matches that still have an identifier),
// and the run that applies it.
type DataQueryResult struct {
	Matched int    `json:"matched"`
	Updated int    `json:"updated"`
	RunID   string `json:"run_id"`
}

// Matcher finds the documents a query matches; readmodels.Matcher
// implements it.
type Matcher interface {
	Match(ctx context.Context, companyID string, q dataquery.Query, fn func(doc []byte) error) error
}

// RunDataQueryHandler handles RunDataQuery.
type RunDataQueryHandler struct {
	matcher Matcher
	uploads StageUploadHandler
}

// NewRunDataQueryHandler returns the handler.
func NewRunDataQueryHandler(matcher Matcher, uploads StageUploadHandler) RunDataQueryHandler {
	if matcher == nil {
		panic("imports: NewRunDataQueryHandler: nil matcher")
	}
	return RunDataQueryHandler{matcher: matcher, uploads: uploads}
}

// Handle checks that the principal may make the update (one that deletes
// or forgets needs the admin role: 403) and the update against the
// datatype's import rules (a validation error, 422, when no record could
// take it), then streams
// the matches into a staged import run: memory stays bounded whatever
// the number of matches.
func (h RunDataQueryHandler) Handle(ctx context.Context, cmd RunDataQuery) (DataQueryResult, error) {
	if err := commands.RequireCompany(cmd.Principal); err != nil {
		return DataQueryResult{}, err
	}
	q := cmd.Query
	if f := destroying(q); f != "" && !mayDestroy(cmd.Principal) {
		return DataQueryResult{}, domain.Errorf(domain.Forbidden,
			"an update that sets %s deletes in bulk, which needs the admin role", f)
	}
	if err := checkUpdate(cmd.Company, q); err != nil {
		return DataQueryResult{}, err
	}
	var res DataQueryResult
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := h.write(ctx, pw, cmd, &res)
		pw.CloseWithError(err)
		done <- err
	}()
	staged, err := h.uploads.Handle(ctx, StageUpload{
		Principal: cmd.Principal, Entity: q.Datatype, Format: ingest.JSON, Body: pr, Source: "query",
	})
	pr.CloseWithError(errors.New("imports: data query: staging stopped"))
	if werr := <-done; werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return DataQueryResult{}, err
	}
	res.RunID = staged.RunID
	return res, nil
}

// write writes the import records of the matches as a JSON list.
func (h RunDataQueryHandler) write(ctx context.Context, w io.Writer, cmd RunDataQuery, res *DataQueryResult) error {
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	err := h.matcher.Match(ctx, cmd.Company.ID, cmd.Query, func(raw []byte) error {
		res.Matched++
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("imports: data query: decode a matched document: %w", err)
		}
		rec, ok := cmd.Query.Record(doc)
		if !ok {
			return nil
		}
		b, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("imports: data query: encode a record: %w", err)
		}
		if res.Updated > 0 {
			b = append([]byte(","), b...)
		}
		res.Updated++
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, "]")
	return err
}

// destroyingFields are the fields that delete or forget when an update
// sets them true: is_deleted and is_forgotten of customers, is_deleted of
// events and products, sale_is_deleted of sales. Soft as some are one by
// one (a product can be brought back), in bulk they are destruction.
var destroyingFields = []string{"is_deleted", "is_forgotten", "sale_is_deleted"}

// destroying returns the field by which q's update deletes or forgets
// every match, "" when it does not: the value read as the import reads it
// (true, "true", 1).
func destroying(q dataquery.Query) string {
	for _, f := range destroyingFields {
		if b, reason := values.Bool(q.Update[f]); reason == "" && b {
			return f
		}
	}
	return ""
}

// checkUpdate parses the update as a record of the datatype, with a
// stand-in identifier: a value that breaks a rule would be rejected for
// every match, so it is refused at once.
func checkUpdate(co company.Company, q dataquery.Query) error {
	rec := make(map[string]any, len(q.Update)+1)
	for k, v := range q.Update {
		rec[k] = v
	}
	var err error
	switch q.Datatype {
	case importing.Events:
		return nil // dataquery.Parse allows only is_deleted: true
	case importing.Customers:
		rec["external_id"] = "stand-in"
		_, err = customer.NewParser(co).ParseMap(rec)
	case importing.Products:
		rec["external_id"] = "stand-in"
		_, err = parseJSON(rec, product.NewParser(co).Parse)
	case importing.Shops:
		rec["external_id"] = "stand-in"
		_, err = parseJSON(rec, shop.NewParser(co).Parse)
	case importing.Sales:
		err = checkSaleUpdate(co, rec)
	}
	if err == nil {
		return nil
	}
	field, reason, ok := problemOf(err)
	if !ok {
		return err
	}
	return &domain.Error{Code: domain.Validation, Message: "the update breaks a rule of " + string(q.Datatype),
		Details: []domain.FieldError{{Field: "update." + field, Reason: reason}}}
}

// parseJSON encodes a record and parses it with parse.
func parseJSON[R any](rec map[string]any, parse func([]byte) (R, error)) (R, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		var zero R
		return zero, fmt.Errorf("imports: data query: encode the update: %w", err)
	}
	return parse(b)
}

// checkSaleUpdate checks a sales update: transaction-level fields only
// (a row is named by its sale and key, which a query cannot give).
func checkSaleUpdate(co company.Company, rec map[string]any) error {
	rec[sale.FieldExternalID] = "stand-in"
	r, err := parseJSON(rec, sale.NewParser(co).Parse)
	switch {
	case err != nil:
		return err
	case r.TxProblem != nil:
		return r.TxProblem
	case len(r.Rows) > 0:
		return &sale.Problem{Reason: "only transaction-level fields (sale_*) can be updated in bulk"}
	}
	return nil
}
