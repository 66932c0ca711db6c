package console

import "testing"

// TestBarChart: bars are stacked in series order on a nice scale, with
// whole steps for counts, and each segment says its figure.
func TestBarChart(t *testing.T) {
	ch := newBarChart("c", "t", []chartSeries{{Name: "accepted", Class: "ok"}, {Name: "rejected", Class: "bad"}},
		[]chartPoint{{Label: "a", Values: []float64{30, 10}}, {Label: "b", Values: []float64{0, 0}}, {Label: "c", Values: []float64{7, 0}}}, formatCount)
	if ch.Empty || len(ch.Bars) != 3 || len(ch.Bars[1].Segments) != 0 || len(ch.Bars[2].Segments) != 1 {
		t.Fatalf("bars %+v", ch.Bars)
	}
	top := ch.Grid[len(ch.Grid)-1]
	if top.Label != "50" || len(ch.Grid) != 6 || ch.Grid[1].Label != "10" {
		t.Fatalf("grid %+v, want 0 to 50 by 10", ch.Grid)
	}
	a := ch.Bars[0].Segments
	if a[0].Title != "a: 30 accepted" || a[1].Title != "a: 10 rejected" || a[1].Y >= a[0].Y || a[0].Y+a[0].H != chartHeight-chartBottom {
		t.Fatalf("segments of a %+v: want accepted on the baseline, rejected above", a)
	}
	// 40 of 50: the stack's height is 4/5 of the plot's.
	plot := float64(chartHeight - chartTop - chartBottom)
	if h := a[0].H + a[1].H; h < plot*0.8-0.2 || h > plot*0.8+0.2 {
		t.Fatalf("stack height %v, want %v", h, plot*0.8)
	}
	if !newBarChart("e", "t", nil, []chartPoint{{Label: "x", Values: []float64{0}}}, nil).Empty {
		t.Fatal("a chart of zeros is not empty")
	}
	for v, want := range map[float64]string{0: "0", 1234567: "1,234,567", -1500: "-1,500", 2.5: "2.50"} {
		if got := formatCount(v); got != want {
			t.Errorf("formatCount(%v) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{0: "0.00", 1000: "10.00", 123456705: "1,234,567.05"} {
		if got := formatMinor(v); got != want {
			t.Errorf("formatMinor(%v) = %q, want %q", v, got, want)
		}
	}
}
