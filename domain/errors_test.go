package domain_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/clientele/clientele/domain"
)

// TestProblemsAreCapped: a validation keeps the first MaxDetails problems
// and counts the rest in one last detail; at most MaxDetails, nothing is
// added. CapDetails caps details collected without Problems the same way.
func TestProblemsAreCapped(t *testing.T) {
	var p domain.Problems
	if p.Err(domain.Invalid, "x") != nil {
		t.Fatal("no problem is an error")
	}
	for i := range 1_000_000 {
		p.Add("f"+strconv.Itoa(i), "unknown field")
	}
	var de *domain.Error
	if !errors.As(p.Err(domain.Invalid, "bad"), &de) {
		t.Fatal("not a domain error")
	}
	if len(de.Details) != domain.MaxDetails || de.More != 999_900 || de.Details[0].Field != "f0" || de.Details[99].Field != "f99" {
		t.Fatalf("%d details and %d more, first %v", len(de.Details), de.More, de.Details[0])
	}
	answered := domain.CapDetails(de.Details, de.More)
	if len(answered) != domain.MaxDetails+1 {
		t.Fatalf("%d details answered", len(answered))
	}
	last := answered[domain.MaxDetails]
	if want := "and 999900 more problems like these: only the first 100 are listed"; last.Field != "" || last.Reason != want {
		t.Errorf("last detail %+v, want %q", last, want)
	}

	few := []domain.FieldError{{Field: "a", Reason: "x"}}
	if got := domain.CapDetails(few, 0); len(got) != 1 {
		t.Errorf("capped %v", got)
	}
	many := make([]domain.FieldError, 250)
	got := domain.CapDetails(many, 0)
	if len(got) != domain.MaxDetails+1 || got[domain.MaxDetails].Reason != "and 150 more problems like these: only the first 100 are listed" {
		t.Errorf("capped to %d, last %+v", len(got), got[len(got)-1])
	}
	if len(many) != 250 || many[domain.MaxDetails].Reason != "" {
		t.Error("CapDetails changed its argument")
	}
}
