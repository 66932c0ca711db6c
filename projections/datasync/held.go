package datasync

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// ForgetTypes implements projections.Forgetter: forgetting a customer
// (CustomerForgotten) is applied ahead of the commits held before it.
func (*Datasync) ForgetTypes() []string { return []string{customer.TypeForgotten} }

// Forget implements projections.Forgetter: while the company is parked, the messages
// already written about a forgotten customer are anonymised at once, as
// its forgetting does (the customers feed's in the forgotten form, the
// events' and sales' without the personal fields). The message of the
// forgetting itself waits for its turn, to be numbered in log order after
// the held changes before it, whose messages the destroyed key turns into
// the forgotten form too; applied then, the forgetting finds nothing more
// to anonymise.
func (p *Datasync) Forget(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var companies []string
	seen := map[string]bool{}
	for _, e := range events {
		if e.Type == customer.TypeForgotten && !seen[e.Metadata.CompanyID] {
			seen[e.Metadata.CompanyID] = true
			companies = append(companies, e.Metadata.CompanyID)
		}
	}
	if len(companies) == 0 {
		return nil
	}
	ts, err := loadSyncTargets(ctx, tx, companies)
	if err != nil {
		return err
	}
	var forgets []forgetting
	for _, e := range events {
		if e.Type != customer.TypeForgotten {
			continue
		}
		var f customer.Forgotten
		if err := bulk.Decode(e, &f); err != nil {
			return err
		}
		fg := forgetting{entity: f.CustomerID}
		for _, t := range ts.byCompany[e.Metadata.CompanyID] {
			if t.datatype == datatarget.Customers {
				fg.targets = append(fg.targets, t.id)
			}
		}
		if len(fg.targets) > 0 {
			forgets = append(forgets, fg)
		}
	}
	if err := anonymiseStored(ctx, tx, datatarget.Customers, forgets); err != nil {
		return err
	}
	return p.forgetPersonal(ctx, tx, ts, events)
}
