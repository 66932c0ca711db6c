// Package commands is the write side: one file per command handler. A
// handler loads what it needs from the event store, lets the domain decide,
// and appends the resulting events in one commit.
//
// The handlers of single commands (companies, users, integrations, tokens,
// datatargets) depend only on the eventstore.Store port, so they run on
// every adapter. The import pipeline (staging, the chunk worker, the
// entity Importers) is the package commands/imports; it works on
// PostgreSQL: an import chunk changes write-side tables (identity
// registry, customer state, data keys) in the same transaction as its
// commit. Uniqueness (company slugs, custom domains, user emails) is
// enforced by the event store too: a reservation stream per unique value,
// appended with ExpectedVersion NoStream in the same commit as the entity,
// turns a duplicate into a conflict without any read model.
//
// Identifiers are UUIDv7 without dashes (32 hex digits): random enough to
// need no coordination, and ordered by creation time, which keeps indexes
// compact and listings in creation order.
package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/storeerr"
)

// Commands lists every use case of the write side.
type Commands struct {
	CreateCompany         CreateCompanyHandler
	UpdateCompanySettings UpdateCompanySettingsHandler
	CreateUser            CreateUserHandler
	CreateIntegration     CreateIntegrationHandler
	CreateAccessToken     CreateAccessTokenHandler
	RevokeAccessToken     RevokeAccessTokenHandler

	// Datatargets and their outlets.
	CreateDatatarget       CreateDatatargetHandler
	UpdateDatatarget       UpdateDatatargetHandler
	PostDatatargetMessages PostDatatargetMessagesHandler
	DeleteDatatarget       DeleteDatatargetHandler
	CreateOutlet           CreateOutletHandler
	ChangeOutlet           ChangeOutletHandler
	DisableOutlet          DisableOutletHandler
	DeleteOutlet           DeleteOutletHandler
	RewindOutlet           RewindOutletHandler
	RedeliverParked        RedeliverParkedHandler
	DiscardParked          DiscardParkedHandler

	// Campaigns (docs/campaigns.md).
	CreateCampaign CreateCampaignHandler
	UpdateCampaign UpdateCampaignHandler

	// Segments (docs/segments.md).
	CreateSegment CreateSegmentHandler
	UpdateSegment UpdateSegmentHandler

	// SFTP keys of the drop directory (docs/sftp.md).
	AddSFTPKey    AddSFTPKeyHandler
	RemoveSFTPKey RemoveSFTPKeyHandler
}

// New returns every handler on store, with now as the clock. The
// handlers reach the store through typedStore: each command's error comes
// out typed, and its callers (api) know neither the event store nor
// PostgreSQL. Outlets' credentials are sealed with the sealer given by
// WithSealer; without one, creating or changing an outlet fails.
func New(store eventstore.Store, now func() time.Time, opts ...Option) Commands {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	sealer := o.sealer
	if sealer == nil {
		sealer = noSealer{}
	}
	store = typedStore{store}
	return Commands{
		CreateCompany:         NewCreateCompanyHandler(store, now),
		UpdateCompanySettings: NewUpdateCompanySettingsHandler(store, now),
		CreateUser:            NewCreateUserHandler(store, now),
		CreateIntegration:     NewCreateIntegrationHandler(store, now),
		CreateAccessToken:     NewCreateAccessTokenHandler(store, now),
		RevokeAccessToken:     NewRevokeAccessTokenHandler(store, now),

		CreateDatatarget:       NewCreateDatatargetHandler(store, now),
		UpdateDatatarget:       NewUpdateDatatargetHandler(store, now),
		PostDatatargetMessages: NewPostDatatargetMessagesHandler(store),
		DeleteDatatarget:       NewDeleteDatatargetHandler(store, now),
		CreateOutlet:           NewCreateOutletHandler(store, sealer, now),
		ChangeOutlet:           NewChangeOutletHandler(store, sealer, now),
		DisableOutlet:          NewDisableOutletHandler(store, now),
		DeleteOutlet:           NewDeleteOutletHandler(store, now),
		RewindOutlet:           NewRewindOutletHandler(store, now),
		RedeliverParked:        NewRedeliverParkedHandler(store, now),
		DiscardParked:          NewDiscardParkedHandler(store, now),

		CreateCampaign: NewCreateCampaignHandler(store, now),
		UpdateCampaign: NewUpdateCampaignHandler(store, now),

		CreateSegment: NewCreateSegmentHandler(store, now),
		UpdateSegment: NewUpdateSegmentHandler(store, now),

		AddSFTPKey:    NewAddSFTPKeyHandler(store, now),
		RemoveSFTPKey: NewRemoveSFTPKeyHandler(store, now),
	}
}

// Option configures New.
type Option func(*options)

type options struct {
	sealer datatarget.Sealer
}

// WithSealer seals outlets' credentials (their secret and header values)
// in the events with s: the master key's (crypto.Keyring).
func WithSealer(s datatarget.Sealer) Option { return func(o *options) { o.sealer = s } }

// noSealer is the sealer of commands built without one: it refuses, so
// that no credential is ever recorded in clear.
type noSealer struct{}

func (noSealer) SealEnvelope([]byte, []byte) ([]byte, []byte, error) {
	return nil, nil, errors.New("commands: no sealer for outlets' credentials (commands.WithSealer)")
}

func (noSealer) OpenEnvelope([]byte, []byte, []byte) ([]byte, error) {
	return nil, errors.New("commands: no sealer for outlets' credentials (commands.WithSealer)")
}

// NewID returns a fresh identifier: a UUIDv7 without dashes.
func NewID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// Only a failing random source gets here.
		panic(fmt.Sprintf("commands: new id: %v", err))
	}
	return strings.ReplaceAll(id.String(), "-", "")
}

type requestKey struct{}

type requestInfo struct {
	source, correlationID string
}

// WithRequest returns a context that makes handlers record source ("api",
// "cli", ...) and correlationID in the metadata of the events they append.
// Without it the source is "cli" for the system principal and "api"
// otherwise, and each command gets a fresh correlation id.
func WithRequest(ctx context.Context, source, correlationID string) context.Context {
	return context.WithValue(ctx, requestKey{}, requestInfo{source: source, correlationID: correlationID})
}

// Metadata returns the metadata of events appended for p in companyID.
func Metadata(ctx context.Context, p access.Principal, companyID string) eventstore.Metadata {
	info, _ := ctx.Value(requestKey{}).(requestInfo)
	if info.source == "" {
		info.source = "api"
		if p.System {
			info.source = "cli"
		}
	}
	if info.correlationID == "" {
		info.correlationID = NewID()
	}
	return eventstore.Metadata{CompanyID: companyID, Actor: p.Actor(), Source: info.source, CorrelationID: info.correlationID}
}

// conflictOn reports whether err is a version conflict on streamID.
// Adapters may not know which stream conflicted (a unique violation
// reported by PostgreSQL on a concurrent creation names one stream only),
// so an unnamed conflict matches any stream.
func conflictOn(err error, streamID string) bool {
	var c *eventstore.ConflictError
	return errors.As(err, &c) && (c.StreamID == "" || c.StreamID == streamID)
}

// appendError wraps a store error that no handler rule explains: every
// handler returns its Append's error through it (after its own rules,
// conflictOn), so that a version conflict is domain.Conflict.
func appendError(err error) error {
	var c *eventstore.ConflictError
	if errors.As(err, &c) {
		return fmt.Errorf("%w (%w)", domain.Errorf(domain.Conflict, "a concurrent change got there first; retry"), err)
	}
	return err
}

// typedStore is the store as the handlers of New see it: the one place
// where every command's error from the store passes, and where a failure
// of the database becomes the typed error of what it means to the
// caller (storeerr.Translate: text that PostgreSQL cannot store is
// domain.Invalid, a database that is away domain.Unavailable). A version
// conflict passes as the store reports it (*eventstore.ConflictError),
// for the handlers' rules (conflictOn) and then appendError.
type typedStore struct{ store eventstore.Store }

func (s typedStore) Append(ctx context.Context, c eventstore.Commit) (eventstore.Committed, error) {
	committed, err := s.store.Append(ctx, c)
	return committed, storeerr.Translate(err)
}

func (s typedStore) ReadStream(ctx context.Context, streamID string, afterVersion int64) ([]eventstore.RecordedEvent, error) {
	events, err := s.store.ReadStream(ctx, streamID, afterVersion)
	return events, storeerr.Translate(err)
}

func (s typedStore) ReadLog(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	events, err := s.store.ReadLog(ctx, after, limit)
	return events, storeerr.Translate(err)
}

func (s typedStore) Head(ctx context.Context) (eventstore.Position, error) {
	head, err := s.store.Head(ctx)
	return head, storeerr.Translate(err)
}

func (s typedStore) ReadCommit(ctx context.Context, txID uint64) ([]eventstore.RecordedEvent, error) {
	events, err := s.store.ReadCommit(ctx, txID)
	return events, storeerr.Translate(err)
}

func (s typedStore) ReadCommitTypes(ctx context.Context, txID uint64, types []string) ([]eventstore.RecordedEvent, eventstore.CommitSpan, error) {
	events, span, err := s.store.ReadCommitTypes(ctx, txID, types)
	return events, span, storeerr.Translate(err)
}

func (s typedStore) ReadCompanyLog(ctx context.Context, companyID string, after, upTo eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	events, err := s.store.ReadCompanyLog(ctx, companyID, after, upTo, limit)
	return events, storeerr.Translate(err)
}

func (s typedStore) EachCompanyEvent(ctx context.Context, companyID string, after, upTo eventstore.Position, fn func(eventstore.RecordedEvent) error) error {
	var fnErr error
	err := s.store.EachCompanyEvent(ctx, companyID, after, upTo, func(e eventstore.RecordedEvent) error {
		fnErr = fn(e)
		return fnErr
	})
	if fnErr != nil {
		return fnErr // the caller's, as it is
	}
	return storeerr.Translate(err)
}

// RequireCompany refuses a principal of no company.
func RequireCompany(p access.Principal) error {
	if p.CompanyID == "" {
		return domain.Errorf(domain.Invalid, "no company")
	}
	return nil
}

// checkSystemCompany makes sure the company of a system principal exists.
// An authenticated principal's company exists: it was found by host.
func checkSystemCompany(ctx context.Context, store eventstore.Store, p access.Principal) error {
	if !p.System {
		return nil
	}
	_, _, err := loadCompany(ctx, store, p.CompanyID)
	return err
}

// stamp is the time recorded for an event: UTC, to the microsecond that
// PostgreSQL keeps, so that what a command returns equals what is read back.
func stamp(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
