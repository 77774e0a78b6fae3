package web

import (
	"math"
	"strconv"
)

// Charts are drawn as inline SVG by the "barchart" and "hbar" partials from these values:
// geometry is computed here, every label is text the template escapes, and colours come
// from the stylesheet (the CSP allows no inline style).

// Point is one value of a chart, with its label ("Nov 22") and the value as shown ("KES 12.00").
type Point struct {
	Label string
	Value float64
	Shown string
}

// BarChart is a vertical bar chart in a fixed viewBox that scales to its container.
type BarChart struct {
	ID             string // unique on its page: its title's and description's element ids derive from it
	Title, Summary string // the chart's accessible name and description
	Width, Height  int
	Bars           []Bar
	Ticks          []Tick // horizontal guide lines with their values, top first
	FirstLabel     string // the first and last bars' labels, under the axis
	LastLabel      string
	Empty          bool // every value is zero
}

// Bar is one bar: its rectangle in viewBox units and its label for a tooltip and screen
// readers.
type Bar struct {
	X, Y, W, H string
	Label      string
}

// Tick is a guide line at Y with its value.
type Tick struct {
	Y, Label string
}

// chart geometry, in viewBox units. The SVG stretches to its box (the stylesheet sets its
// height), so its only text, the guide lines' values, is HTML beside it at a readable size.
const (
	chartWidth  = 600
	chartHeight = 200
	chartLeft   = 0
)

// NewBarChart lays out points as bars, scaled to the largest value (rounded up to a nice
// number for the guide lines). format renders a tick's value.
func NewBarChart(id, title, summary string, points []Point, format func(float64) string) BarChart {
	c := BarChart{ID: id, Title: title, Summary: summary, Width: chartWidth, Height: chartHeight}
	peak := 0.0
	for _, p := range points {
		peak = math.Max(peak, p.Value)
	}
	c.Empty = peak == 0
	top := niceCeil(peak)
	if top == 0 {
		top = 1
	}
	plot := float64(chartHeight)
	for i := 2; i >= 0; i-- {
		v := top * float64(i) / 2
		c.Ticks = append(c.Ticks, Tick{Y: num(plot - plot*float64(i)/2), Label: format(v)})
	}
	if len(points) == 0 {
		return c
	}
	slot := float64(chartWidth-chartLeft) / float64(len(points))
	w := math.Max(slot*0.7, 1)
	for i, p := range points {
		h := plot * p.Value / top
		if p.Value > 0 && h < 1 {
			h = 1 // a tiny spend still shows
		}
		c.Bars = append(c.Bars, Bar{
			X: num(chartLeft + slot*float64(i) + (slot-w)/2), Y: num(plot - h), W: num(w), H: num(h),
			Label: p.Label + ": " + p.Shown,
		})
	}
	c.FirstLabel, c.LastLabel = points[0].Label, points[len(points)-1].Label
	return c
}

// HBar is a horizontal bar for a rate: Percent of the track filled.
type HBar struct {
	Label   string // what the rate is of, for screen readers ("Safaricom delivery rate")
	Percent float64
	Fill    string // the filled width in viewBox units (0–100)
	Shown   string // "97.3%"
}

// NewHBar draws a rate between 0 and 100 percent.
func NewHBar(label string, percent float64) HBar {
	p := math.Max(0, math.Min(100, percent))
	return HBar{Label: label, Percent: p, Fill: num(p), Shown: Percent(p)}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 0
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*exp {
			return m * exp
		}
	}
	return 10 * exp
}

func num(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }
