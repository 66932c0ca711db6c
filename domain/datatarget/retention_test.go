package datatarget_test

import (
	"testing"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

// TestMessageRetention: only admins set a datatarget's retention of
// delivered messages, on creation or by a patch, to 0 (for ever) up to a
// hundred years; the same value again is no change, and the events carry
// it.
func TestMessageRetention(t *testing.T) {
	days := func(n int) *int { return &n }
	d, err := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "dt"}, now)
	if err != nil || d.MessageRetentionDays != nil {
		t.Fatalf("created without a retention: %+v %v", d, err)
	}
	for _, c := range []struct {
		name string
		p    bool // admin
		days int
		want domain.Code
	}{
		{"staff", false, 30, domain.Forbidden},
		{"negative", true, -1, domain.Validation},
		{"over a hundred years", true, datatarget.MaxMessageRetentionDays + 1, domain.Validation},
		{"for ever", true, 0, ""},
		{"a month", true, 30, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			who := staff
			if c.p {
				who = admin
			}
			got, changed, err := d.Apply(who, datatarget.Patch{MessageRetentionDays: days(c.days)}, now)
			if domain.ErrorCode(err) != c.want {
				t.Fatalf("patch: %v, want %q", err, c.want)
			}
			if c.want == "" && (!changed || *got.MessageRetentionDays != c.days) {
				t.Fatalf("patch: %+v changed %v", got.MessageRetentionDays, changed)
			}
			_, err = datatarget.New(who, "d2", datatarget.Spec{Type: datatarget.Messages, Name: "dt", MessageRetentionDays: days(c.days)}, now)
			if domain.ErrorCode(err) != c.want {
				t.Fatalf("creation: %v, want %q", err, c.want)
			}
		})
	}
	kept, _, _ := d.Apply(admin, datatarget.Patch{MessageRetentionDays: days(7)}, now)
	if _, changed, err := kept.Apply(staff, datatarget.Patch{MessageRetentionDays: days(7)}, now); err != nil || changed {
		t.Errorf("the same retention again by staff: changed %v, %v", changed, err)
	}
	if back := datatarget.NewUpdated(kept).Apply(d); back.MessageRetentionDays == nil || *back.MessageRetentionDays != 7 {
		t.Errorf("the event does not carry the retention: %+v", back.MessageRetentionDays)
	}
	if created := datatarget.NewCreated(kept).Datatarget(kept.CompanyID); *created.MessageRetentionDays != 7 {
		t.Errorf("the creation does not carry the retention")
	}
}
