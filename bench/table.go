package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"
)

// A unit says how a row's samples read.
type unit int

const (
	nanos     unit = iota // a duration in nanoseconds
	byteSize              // a size in bytes
	perSecond             // a rate
	number                // a plain count
)

// scale picks the divisor and suffix that suit v, or -v: a growth may
// be negative.
func (u unit) scale(v float64) (float64, string) {
	v = math.Abs(v)
	switch u {
	case nanos:
		switch {
		case v >= 1e9:
			return 1e9, " s"
		case v >= 1e6:
			return 1e6, " ms"
		case v >= 1e3:
			return 1e3, " µs"
		}
		return 1, " ns"
	case byteSize:
		switch {
		case v >= 1<<20:
			return 1 << 20, " MiB"
		case v >= 1<<10:
			return 1 << 10, " KiB"
		}
		return 1, " B"
	case perSecond:
		switch {
		case v >= 1e6:
			return 1e6, " M/s"
		case v >= 1e3:
			return 1e3, " k/s"
		}
		return 1, " /s"
	}
	return 1, ""
}

// digits3 prints v with three significant digits, or as an integer when
// it is one.
func digits3(v float64) string {
	switch a := math.Abs(v); {
	case v == math.Trunc(v) && a < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// cell prints a series as its median and, with several samples, its
// range in the median's scale: "3.12 ms (2.95-4.10)".
func (u unit) cell(s series) string {
	if len(s) == 0 {
		return "-"
	}
	med := s.median()
	div, suffix := u.scale(med)
	out := digits3(med/div) + suffix
	if lo, hi := s.min(), s.max(); len(s) > 1 && lo != hi {
		out += " (" + digits3(lo/div) + "-" + digits3(hi/div) + ")"
	}
	return out
}

// A row is one figure for both tools.
type row struct {
	name            string
	unit            unit
	kinst, bpftrace series
	target          target
}

// A target is the goal for a row.
type target struct {
	text string
	// met says whether the row meets it; known is false when the row
	// lacks what the judgement needs.
	met func(r *row) (met, known bool)
}

func kinstMedianAtMost(limit float64, text string) target {
	return target{text, func(r *row) (bool, bool) {
		return r.kinst.median() <= limit, len(r.kinst) > 0
	}}
}

func kinstMedianAtLeast(limit float64, text string) target {
	return target{text, func(r *row) (bool, bool) {
		return r.kinst.median() >= limit, len(r.kinst) > 0
	}}
}

// kinstPeakAtMost judges the worst sample, for figures that are limits
// rather than typical values.
func kinstPeakAtMost(limit float64, text string) target {
	return target{text, func(r *row) (bool, bool) {
		return r.kinst.max() <= limit, len(r.kinst) > 0
	}}
}

func ratioAtMost(limit float64) target {
	return target{"ratio <= " + digits3(limit), func(r *row) (bool, bool) {
		q := ratio(r.kinst, r.bpftrace)
		return q <= limit, !math.IsNaN(q)
	}}
}

func ratioAtLeast(limit float64) target {
	return target{"ratio >= " + digits3(limit), func(r *row) (bool, bool) {
		q := ratio(r.kinst, r.bpftrace)
		return q >= limit, !math.IsNaN(q)
	}}
}

func (r *row) verdict() string {
	if r.target.met == nil {
		return ""
	}
	met, known := r.target.met(r)
	switch {
	case !known:
		return "n/a"
	case met:
		return "met"
	}
	return "MISSED"
}

func (r *row) ratio() string {
	q := ratio(r.kinst, r.bpftrace)
	if math.IsNaN(q) || math.IsInf(q, 0) {
		return "-"
	}
	return strconv.FormatFloat(q, 'g', 3, 64)
}

// printTable writes the rows as aligned columns.
func printTable(w io.Writer, rows []*row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tKINST\tBPFTRACE\tKINST/BPFTRACE\tTARGET\tVERDICT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.name, r.unit.cell(r.kinst), r.unit.cell(r.bpftrace),
			r.ratio(), r.target.text, r.verdict())
	}
	return tw.Flush()
}
