package console

import (
	"cmp"
	"math"
	"strconv"
)

// Charts are drawn on the server as inline SVG (templates/_chart.html):
// no script draws them and no library is loaded, and they carry no
// inline style, which the Content-Security-Policy forbids: the
// stylesheet colours their parts by class (chart-*). Geometry is in the
// SVG's own units; the figure scales to the page's width.

// chartSeries is one series of a bar chart: its bars' segments share
// the class and the legend's label.
type chartSeries struct {
	Name  string
	Class string
}

// chartPoint is one bar: a value per series, stacked in series order.
type chartPoint struct {
	Label  string
	Values []float64
	// Title names the bar in full in its segments' titles (a date where
	// Label is its day of the month); Label when empty.
	Title string
}

// barChart is a chart ready for the "barchart" template.
type barChart struct {
	ID, Title     string
	Width, Height int
	Bars          []chartBar
	Grid          []chartGrid
	Legend        []chartSeries
	// Empty is true when every value is 0: the template says so.
	Empty bool
}

type chartBar struct {
	Label          string
	LabelX, LabelY float64
	Segments       []chartSegment
}

type chartSegment struct {
	Class, Title string
	X, Y, W, H   float64
}

type chartGrid struct {
	Y, LabelY float64
	X1, X2    float64
	Label     string
}

// Chart geometry, in SVG units.
const (
	chartHeight = 220
	chartTop    = 12
	chartBottom = 30 // room for the bars' labels
	chartLeft   = 56 // room for the axis' labels
	chartRight  = 8
	chartBarMax = 64
)

// newBarChart lays out a stacked bar chart of points; format writes a
// value as the axis and the bars' titles show it.
func newBarChart(id, title string, series []chartSeries, points []chartPoint, format func(float64) string) barChart {
	if format == nil {
		format = formatCount
	}
	width := max(480, chartLeft+chartRight+len(points)*40)
	ch := barChart{ID: id, Title: title, Width: width, Height: chartHeight, Legend: series}
	top := 0.0
	for _, p := range points {
		sum := 0.0
		for _, v := range p.Values {
			sum += max(v, 0)
		}
		top = max(top, sum)
	}
	ch.Empty = top == 0
	scaleMax := niceCeil(top)
	plotH := float64(chartHeight - chartTop - chartBottom)
	plotW := float64(width - chartLeft - chartRight)
	baseline := float64(chartHeight - chartBottom)
	ticks := gridSteps(scaleMax)
	for i := 0; i <= ticks; i++ {
		v := scaleMax * float64(i) / float64(ticks)
		y := baseline - plotH*float64(i)/float64(ticks)
		ch.Grid = append(ch.Grid, chartGrid{Y: round1(y), LabelY: round1(y + 4), X1: chartLeft, X2: float64(width - chartRight), Label: format(v)})
	}
	if len(points) == 0 {
		return ch
	}
	slot := plotW / float64(len(points))
	barW := math.Min(slot*0.7, chartBarMax)
	for i, p := range points {
		x := chartLeft + slot*float64(i) + (slot-barW)/2
		b := chartBar{Label: p.Label, LabelX: round1(x + barW/2), LabelY: baseline + 18}
		y := baseline
		for j, v := range p.Values {
			if j >= len(series) || v <= 0 {
				continue
			}
			h := plotH * v / scaleMax
			y -= h
			b.Segments = append(b.Segments, chartSegment{
				Class: series[j].Class, Title: cmp.Or(p.Title, p.Label) + ": " + format(v) + " " + series[j].Name,
				X: round1(x), Y: round1(y), W: round1(barW), H: round1(h),
			})
		}
		ch.Bars = append(ch.Bars, b)
	}
	return ch
}

// niceCeil is the smallest of 1, 2, 2.5 or 5 times a power of ten that
// is at least v (and at least 1): the top of the axis.
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// gridSteps is how many steps the axis is cut into: 4 or 5 when the
// steps are then whole numbers (a count is never 1.25), else 2 or 1.
func gridSteps(top float64) int {
	for _, n := range []int{4, 5, 2} {
		if step := top / float64(n); step == math.Trunc(step) {
			return n
		}
	}
	return 1
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// formatCount writes a count with thousands separators (1,234,567), and
// a fraction with at most two decimals.
func formatCount(v float64) string {
	if v != math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatInt(int64(v), 10)
	neg := ""
	if s[0] == '-' {
		neg, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return neg + s
}

// formatMinor writes an amount of minor units (cents) as major units
// with two decimals and thousands separators.
func formatMinor(v float64) string {
	whole := math.Trunc(v / 100)
	cents := int64(math.Abs(math.Round(v - whole*100)))
	return formatCount(whole) + "." + strconv.FormatInt(100+cents, 10)[1:]
}
