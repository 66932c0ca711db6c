package datatarget

import (
	"fmt"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// MaxMessageRetentionDays bounds a datatarget's message_retention_days
// (a hundred years).
const MaxMessageRetentionDays = 36500

// checkRetention decides whether p may set a datatarget's retention of
// delivered messages to days: an admin only (pruning deletes data), and
// a number of days from 0 (kept for ever) to MaxMessageRetentionDays.
// nil leaves the server's default.
func checkRetention(p access.Principal, days *int) ([]domain.FieldError, error) {
	if days == nil {
		return nil, nil
	}
	if err := MayControl(p); err != nil {
		return nil, domain.Errorf(domain.Forbidden, "setting a datatarget's message retention requires the admin role")
	}
	if *days < 0 || *days > MaxMessageRetentionDays {
		return []domain.FieldError{{Field: "message_retention_days",
			Reason: fmt.Sprintf("must be a number of days from 0 (kept for ever) to %d", MaxMessageRetentionDays)}}, nil
	}
	return nil, nil
}

// sameDays reports whether two retentions are the same (nil: the
// server's default).
func sameDays(a, b *int) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
