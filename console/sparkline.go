package console

import (
	"strconv"
	"strings"
)

// sparkline is a small trend chart beside a headline figure: the days'
// values as a line over its area, drawn on the server as inline SVG
// (templates/_spark.html), coloured by the stylesheet, as the bar
// charts are (chart.go).
type sparkline struct {
	Title         string
	Width, Height int
	// Line and Area are the points of the SVG polyline and polygon.
	Line, Area string
	// lastX is where the line ends.
	lastX float64
}

// Geometry of a sparkline, in SVG units.
const (
	sparkWidth  = 160
	sparkHeight = 36
	sparkPad    = 3
)

// newSparkline lays out values, oldest first.
func newSparkline(title string, values []float64) sparkline {
	s := sparkline{Title: title, Width: sparkWidth, Height: sparkHeight}
	if len(values) == 0 {
		return s
	}
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	if top == 0 {
		top = 1
	}
	step := 0.0
	if len(values) > 1 {
		step = float64(sparkWidth-2*sparkPad) / float64(len(values)-1)
	}
	base := float64(sparkHeight - sparkPad)
	var line strings.Builder
	for i, v := range values {
		x := round1(sparkPad + step*float64(i))
		y := round1(base - (base-sparkPad)*max(v, 0)/top)
		if i > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(strconv.FormatFloat(x, 'f', -1, 64) + "," + strconv.FormatFloat(y, 'f', -1, 64))
		s.lastX = x
	}
	s.Line = line.String()
	first := strconv.FormatFloat(sparkPad, 'f', -1, 64)
	last := strconv.FormatFloat(s.lastX, 'f', -1, 64)
	b := strconv.FormatFloat(base, 'f', -1, 64)
	s.Area = first + "," + b + " " + s.Line + " " + last + "," + b
	return s
}
