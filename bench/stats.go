package main

import (
	"math"
	"slices"
)

// A series holds one figure's samples, one per repetition.
type series []float64

// median is the middle sample, or the mean of the two middle ones; NaN
// for no samples.
func (s series) median() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	c := slices.Clone(s)
	slices.Sort(c)
	mid := len(c) / 2
	if len(c)%2 == 1 {
		return c[mid]
	}
	return (c[mid-1] + c[mid]) / 2
}

func (s series) min() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return slices.Min(s)
}

func (s series) max() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return slices.Max(s)
}

// ratio is a's median over b's, NaN when either has no samples.
func ratio(a, b series) float64 {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN()
	}
	return a.median() / b.median()
}
