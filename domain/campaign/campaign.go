// Package campaign holds marketing campaigns: what a campaign is (its key,
// kind, attributes and state), who may manage campaigns, the states and
// the transitions between them, and the events that record every change.
// It stores nothing: commands append its events to the campaign's stream,
// and projections keep the read model (and, later, the statistics, which
// follow the same events).
package campaign

import (
	"slices"
	"strconv"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// Kind is how a campaign reaches people. It is fixed when the campaign is
// created: its statistics, its default marketing permission and whether it
// is automated all follow from it.
type Kind string

// Kinds. EXT is a campaign run outside the service (it has no statistics).
const (
	Email          Kind = "email"
	AutomatedEmail Kind = "automated-email"
	SMS            Kind = "sms"
	AutomatedSMS   Kind = "automated-sms"
	External       Kind = "EXT"
)

// Kinds lists every kind, in the order error messages name them.
var Kinds = []Kind{Email, AutomatedEmail, SMS, AutomatedSMS, External}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// Automated reports whether campaigns of kind k are automated (sent by a
// flow to each customer as they qualify, rather than once to a list).
func (k Kind) Automated() bool { return k == AutomatedEmail || k == AutomatedSMS }

// DefaultPermission is the customer permission a campaign of kind k needs
// unless it names another: can_email for mail, can_sms for SMS, none for
// EXT, which the service does not send.
func (k Kind) DefaultPermission() string {
	switch k {
	case Email, AutomatedEmail:
		return "can_email"
	case SMS, AutomatedSMS:
		return "can_sms"
	}
	return ""
}

// State is where a campaign is in its life.
type State string

// States. A campaign is created as a draft; see Transition for the moves
// between them.
const (
	StateDraft    State = "draft"
	StateActive   State = "active"
	StatePaused   State = "paused"
	StateArchived State = "archived"
)

// States lists every state.
var States = []State{StateDraft, StateActive, StatePaused, StateArchived}

// Valid reports whether s is one of States.
func (s State) Valid() bool { return slices.Contains(States, s) }

// Tag is one of a campaign's tags.
type Tag struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Folder is where a campaign is filed in the sending tool.
type Folder struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Attributes are the parts of a campaign a PATCH may change freely (its
// key and kind never change; its state changes by transitions). Events
// carry them whole, so the last one applied is the campaign's.
type Attributes struct {
	Name        string `json:"name"`
	UTMCampaign string `json:"utm_campaign"`
	// Tags is never nil once decided (an empty list answers []).
	Tags []Tag `json:"campaign_tags"`
	// Folder is nil when the campaign is in none.
	Folder *Folder `json:"folder"`
	// Permission is the marketing permission in effect: the one given, or
	// the kind's default ("" for an EXT campaign without one).
	Permission string `json:"marketing_permission"`
	// ProductIDs are the external_ids of the products featured in the
	// campaign's content ("campaign products"), in the order given,
	// without duplicates; never nil once decided.
	ProductIDs []string `json:"product_ids"`
}

func (a Attributes) equal(b Attributes) bool {
	return a.Name == b.Name && a.UTMCampaign == b.UTMCampaign && slices.Equal(a.Tags, b.Tags) &&
		(a.Folder == nil) == (b.Folder == nil) && (a.Folder == nil || *a.Folder == *b.Folder) &&
		a.Permission == b.Permission && slices.Equal(a.ProductIDs, b.ProductIDs)
}

// Campaign is a campaign as its events leave it.
type Campaign struct {
	CompanyID string
	// Key identifies the campaign within its company, in its stream name
	// and in the campaign_key of the events that report its activity.
	Key   string
	Kind  Kind
	State State
	Attributes
	CreatedAt time.Time
	// ActivatedAt is when the campaign first became active (zero while it
	// never has): the start of its statistics window. Zero means "never"
	// and nothing else: an activation at the zero instant is refused.
	ActivatedAt time.Time
	UpdatedAt   time.Time
	// CreatedBy is the creator's owner id or "system".
	CreatedBy string
}

// Automated reports whether the campaign is automated (by its kind).
func (c Campaign) Automated() bool { return c.Kind.Automated() }

// MayManage decides who creates and changes campaigns: the staff role (or
// more), as for datatargets. Any principal of the company may read them;
// a token without roles (an integration's, by default) reports campaign
// activity through event imports but does not define campaigns unless its
// creator transferred a role to it.
func MayManage(p access.Principal) error {
	if p.HasRole(access.RoleStaff) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "creating or changing campaigns requires the staff or admin role")
}

// Keys.
const (
	// MaxKey is the longest campaign_key, in characters.
	MaxKey = 100
	// GeneratedPrefix starts the keys the service generates: CA-1, CA-2...
	GeneratedPrefix = "CA-"
)

// ReasonKey is why a campaign_key is refused.
const ReasonKey = "must be 1 to 100 ASCII letters, digits and dashes"

// ValidKey reports whether key is a campaign_key: ASCII letters, digits
// and dashes, at most MaxKey. Keys are compared as they are (case kept),
// as the campaign_key of imported events is.
func ValidKey(key string) bool {
	if key == "" || len(key) > MaxKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// GeneratedKey is the n-th key the service generates for a company.
func GeneratedKey(n int64) string { return GeneratedPrefix + strconv.FormatInt(n, 10) }
