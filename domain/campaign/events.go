package campaign

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event type names, as stored in the event log. They are durable: never
// rename one. Every event of a campaign's stream carries its
// campaign_key, so a projector needs nothing but the event (and the
// company of its metadata) to follow campaigns.
const (
	CreatedType   = "CampaignCreated"
	UpdatedType   = "CampaignUpdated"
	ActivatedType = "CampaignActivated"
	PausedType    = "CampaignPaused"
	ResumedType   = "CampaignResumed"
	ArchivedType  = "CampaignArchived"
	// KeyGeneratedType is on the keys stream, not the campaign's.
	KeyGeneratedType = "CampaignKeyGenerated"
)

// EventTypes lists the types of a campaign's stream, for projectors that
// read only those (projections.TypeFilter).
var EventTypes = []string{CreatedType, UpdatedType, ActivatedType, PausedType, ResumedType, ArchivedType}

// Event is an event of a campaign's stream.
type Event interface {
	// EventType is the event's type name in the log.
	EventType() string
	// CampaignKey is the key of the campaign the event is about.
	CampaignKey() string
	// apply returns c as the event leaves it.
	apply(c Campaign) Campaign
}

// Created starts a campaign's stream. The campaign is a draft: a creation
// that asks for another state is followed, in the same commit, by the
// transition's event.
type Created struct {
	Key  string `json:"campaign_key"`
	Kind Kind   `json:"kind"`
	Attributes
	CreatedAt time.Time `json:"created_at"`
	CreatedBy string    `json:"created_by"`
}

// Updated records a campaign's new attributes, all of them whatever
// changed, so the last one applied is the state.
type Updated struct {
	Key string `json:"campaign_key"`
	Attributes
	UpdatedAt time.Time `json:"updated_at"`
}

// Activated moves a draft to active. ActivatedAt opens the statistics
// window; it is the request's (an imported history) or the time of the
// change.
type Activated struct {
	Key         string    `json:"campaign_key"`
	ActivatedAt time.Time `json:"activated_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Paused moves an active campaign to paused.
type Paused struct {
	Key       string    `json:"campaign_key"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Resumed moves a paused campaign back to active; ActivatedAt stays the
// first activation's.
type Resumed struct {
	Key       string    `json:"campaign_key"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Archived retires a campaign from any state; From is the state it left.
// Nothing leaves archived.
type Archived struct {
	Key       string    `json:"campaign_key"`
	From      State     `json:"from"`
	UpdatedAt time.Time `json:"updated_at"`
}

// KeyGenerated records that the company's Number-th generated key went to
// the campaign Key (numbers taken by given keys are skipped, so Number
// may jump).
type KeyGenerated struct {
	Number int64  `json:"number"`
	Key    string `json:"campaign_key"`
}

// EventType implements Event.
func (Created) EventType() string { return CreatedType }

// EventType implements Event.
func (Updated) EventType() string { return UpdatedType }

// EventType implements Event.
func (Activated) EventType() string { return ActivatedType }

// EventType implements Event.
func (Paused) EventType() string { return PausedType }

// EventType implements Event.
func (Resumed) EventType() string { return ResumedType }

// EventType implements Event.
func (Archived) EventType() string { return ArchivedType }

// CampaignKey implements Event.
func (e Created) CampaignKey() string { return e.Key }

// CampaignKey implements Event.
func (e Updated) CampaignKey() string { return e.Key }

// CampaignKey implements Event.
func (e Activated) CampaignKey() string { return e.Key }

// CampaignKey implements Event.
func (e Paused) CampaignKey() string { return e.Key }

// CampaignKey implements Event.
func (e Resumed) CampaignKey() string { return e.Key }

// CampaignKey implements Event.
func (e Archived) CampaignKey() string { return e.Key }

func (e Created) apply(c Campaign) Campaign {
	return Campaign{
		CompanyID: c.CompanyID, Key: e.Key, Kind: e.Kind, State: StateDraft, Attributes: e.Attributes.clone(),
		CreatedAt: e.CreatedAt, UpdatedAt: e.CreatedAt, CreatedBy: e.CreatedBy,
	}
}

func (e Updated) apply(c Campaign) Campaign {
	c.Attributes, c.UpdatedAt = e.Attributes.clone(), e.UpdatedAt
	return c
}

func (e Activated) apply(c Campaign) Campaign {
	c.State, c.ActivatedAt, c.UpdatedAt = StateActive, e.ActivatedAt, e.UpdatedAt
	return c
}

func (e Paused) apply(c Campaign) Campaign {
	c.State, c.UpdatedAt = StatePaused, e.UpdatedAt
	return c
}

func (e Resumed) apply(c Campaign) Campaign {
	c.State, c.UpdatedAt = StateActive, e.UpdatedAt
	return c
}

func (e Archived) apply(c Campaign) Campaign {
	c.State, c.UpdatedAt = StateArchived, e.UpdatedAt
	return c
}

// Apply returns c as e leaves it: a campaign is the fold of its stream
// from the zero Campaign (with its CompanyID set).
func (c Campaign) Apply(e Event) Campaign { return e.apply(c) }

// Decode decodes an event of a campaign's stream. Events of other types
// decode to nil without error: a reader of the log meets every type.
func Decode(typ string, data []byte) (Event, error) {
	var (
		e   Event
		err error
	)
	switch typ {
	case CreatedType:
		e, err = decodeAs[Created](data)
	case UpdatedType:
		e, err = decodeAs[Updated](data)
	case ActivatedType:
		e, err = decodeAs[Activated](data)
	case PausedType:
		e, err = decodeAs[Paused](data)
	case ResumedType:
		e, err = decodeAs[Resumed](data)
	case ArchivedType:
		e, err = decodeAs[Archived](data)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("campaign: decode %s: %w", typ, err)
	}
	return e, nil
}

func decodeAs[T Event](data []byte) (Event, error) {
	var v T
	err := json.Unmarshal(data, &v)
	return v, err
}

// clone copies the lists, so that a campaign never shares them with an
// event (or another campaign) and nil lists become empty ones.
func (a Attributes) clone() Attributes {
	a.Tags = append([]Tag{}, a.Tags...)
	a.ProductIDs = append([]string{}, a.ProductIDs...)
	if a.Folder != nil {
		f := *a.Folder
		a.Folder = &f
	}
	return a
}
