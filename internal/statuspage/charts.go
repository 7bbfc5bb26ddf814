package statuspage

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
)

// DefaultChartHours is how far back the page's charts look, in one-hour
// buckets.
const DefaultChartHours = 12

// chartCacheTTL bounds how often the charts rescan the audit stream: the
// page refreshes every 2 s, and a scan of hours of events is up to one
// XRANGE round trip per 500 entries, too much to pay on every refresh.
const chartCacheTTL = 15 * time.Second

// Chart geometry, in SVG user units.
const (
	chartW, chartH   = 460.0, 160.0
	chartLeft        = 44.0 // room for the y axis labels
	chartBottom      = 20.0 // room for the x axis labels
	chartTop         = 10.0
	chartBarGapRatio = 0.2
)

// chart is one server-rendered SVG bar chart. Every number is computed
// here; the template only places them, and every text (titles, tooltips)
// goes through html/template, which escapes it for the SVG text it lands in.
type chart struct {
	ID, Title, Note string
	W, H            float64
	Bars            []chartBar
	YTicks          []chartTick
	XTicks          []chartTick
	Empty           bool
	Legend          []chartLegend
}

type chartBar struct {
	X, Y, W, H float64
	Class, Tip string
}

type chartTick struct {
	X, Y  float64
	Label string
}

type chartLegend struct{ Class, Label string }

// charts are the page's two charts over the last hours.
type charts struct {
	Hours      int
	Throughput chart
	LeadTime   chart
}

// chartCache keeps the last charts for chartCacheTTL.
type chartCache struct {
	mu  sync.Mutex
	at  time.Time
	val charts
}

// hourBucket is what one hour of the audit stream adds up to.
type hourBucket struct {
	done, failed int
	leads        []time.Duration
}

// readCharts builds the charts from the audit stream's last hours, cached.
func (h *handler) readCharts(ctx context.Context) (charts, error) {
	now := h.cfg.Clock()
	h.charts.mu.Lock()
	defer h.charts.mu.Unlock()
	if !h.charts.at.IsZero() && now.Sub(h.charts.at) < chartCacheTTL && now.After(h.charts.at) {
		return h.charts.val, nil
	}
	hours := DefaultChartHours
	// Buckets end at the next whole hour, so they are stable between
	// refreshes and labelled by the hour they cover.
	end := now.Truncate(time.Hour).Add(time.Hour)
	start := end.Add(-time.Duration(hours) * time.Hour)
	buckets := make([]hourBucket, hours)
	claimed := map[string]time.Time{} // ticket → when it last went Pending → Enqueued
	err := h.reader.Since(ctx, start, func(e audit.Entry) bool {
		ev := e.Event
		if ev.Kind != lifecycle.EventTransition || ev.At.Before(start) || !ev.At.Before(end) {
			return true
		}
		key := ev.Ref.Platform + ":" + ev.Ref.ID
		if ev.From == lifecycle.Pending && ev.To == lifecycle.Enqueued {
			claimed[key] = ev.At
		}
		if ev.To != lifecycle.Done && ev.To != lifecycle.Failed {
			return true
		}
		b := &buckets[int(ev.At.Sub(start)/time.Hour)]
		if ev.To == lifecycle.Done {
			b.done++
		} else {
			b.failed++
		}
		if c, ok := claimed[key]; ok {
			b.leads = append(b.leads, ev.At.Sub(c))
			delete(claimed, key)
		}
		return true
	})
	if err != nil {
		return charts{}, err
	}
	h.charts.val = charts{Hours: hours, Throughput: throughputChart(start, buckets), LeadTime: leadTimeChart(start, buckets)}
	h.charts.at = now
	return h.charts.val, nil
}

// frame returns an empty chart with its x axis (every third hour
// labelled, in UTC) and the width of one bar slot.
func frame(id, title string, start time.Time, n int) (chart, float64) {
	c := chart{ID: id, Title: title, W: chartW, H: chartH}
	slot := (chartW - chartLeft) / float64(n)
	for i := 0; i < n; i += 3 {
		c.XTicks = append(c.XTicks, chartTick{X: chartLeft + float64(i)*slot, Y: chartH - 5,
			Label: start.Add(time.Duration(i) * time.Hour).UTC().Format("15:04")})
	}
	return c, slot
}

// yAxis adds three y ticks up to max, labelled by label.
func (c *chart) yAxis(maxV float64, label func(float64) string) {
	for _, f := range []float64{0, 0.5, 1} {
		c.YTicks = append(c.YTicks, chartTick{X: chartLeft - 4, Y: c.y(f*maxV, maxV), Label: label(f * maxV)})
	}
}

// y is the SVG y of value v on a 0..maxV axis.
func (c *chart) y(v, maxV float64) float64 {
	plot := chartH - chartBottom - chartTop
	return chartTop + plot - plot*v/maxV
}

func throughputChart(start time.Time, buckets []hourBucket) chart {
	c, slot := frame("chart-throughput", "Throughput: tickets finished per hour", start, len(buckets))
	c.Legend = []chartLegend{{"s-done", "done"}, {"s-failed", "failed"}}
	maxV := 0
	for _, b := range buckets {
		maxV = max(maxV, b.done+b.failed)
	}
	if maxV == 0 {
		c.Empty = true
		maxV = 1
	}
	top := float64(maxV)
	c.yAxis(top, func(v float64) string { return fmt.Sprintf("%.0f", v) })
	for i, b := range buckets {
		x := chartLeft + float64(i)*slot + slot*chartBarGapRatio/2
		w := slot * (1 - chartBarGapRatio)
		hour := start.Add(time.Duration(i) * time.Hour).UTC().Format("15:04")
		base := 0.0
		for _, part := range []struct {
			n     int
			class string
		}{{b.done, "s-done"}, {b.failed, "s-failed"}} {
			if part.n == 0 {
				continue
			}
			y0, y1 := c.y(base, top), c.y(base+float64(part.n), top)
			c.Bars = append(c.Bars, chartBar{X: x, Y: y1, W: w, H: y0 - y1, Class: part.class,
				Tip: fmt.Sprintf("%s UTC: %d done, %d failed", hour, b.done, b.failed)})
			base += float64(part.n)
		}
	}
	return c
}

func leadTimeChart(start time.Time, buckets []hourBucket) chart {
	c, slot := frame("chart-lead", "Lead time: claim to done/failed, median per hour", start, len(buckets))
	c.Note = "tickets claimed before the window are left out"
	var maxV time.Duration
	medians := make([]time.Duration, len(buckets))
	for i, b := range buckets {
		if len(b.leads) == 0 {
			continue
		}
		s := slices.Clone(b.leads)
		slices.Sort(s)
		medians[i] = s[len(s)/2] // the upper median of an even count
		maxV = max(maxV, medians[i])
	}
	if maxV == 0 {
		c.Empty = true
		maxV = time.Second
	}
	top := float64(maxV.Milliseconds())
	c.yAxis(top, func(v float64) string {
		if top < 1000 {
			return fmt.Sprintf("%.0f ms", v) // humanMS would say 0.0 s
		}
		return humanMS(int64(v))
	})
	for i, b := range buckets {
		if len(b.leads) == 0 {
			continue
		}
		v := float64(medians[i].Milliseconds())
		y := c.y(v, top)
		c.Bars = append(c.Bars, chartBar{X: chartLeft + float64(i)*slot + slot*chartBarGapRatio/2, Y: y,
			W: slot * (1 - chartBarGapRatio), H: c.y(0, top) - y, Class: "lead",
			Tip: fmt.Sprintf("%s UTC: median %s over %d ticket(s), longest %s", start.Add(time.Duration(i)*time.Hour).UTC().Format("15:04"),
				humanMS(medians[i].Milliseconds()), len(b.leads), humanMS(slices.Max(b.leads).Milliseconds()))})
	}
	return c
}
