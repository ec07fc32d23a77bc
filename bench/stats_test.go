package main

import (
	"math"
	"testing"
)

func TestSeries(t *testing.T) {
	tests := []struct {
		name          string
		s             series
		med, min, max float64
	}{
		{"odd", series{5, 1, 3}, 3, 1, 5},
		{"even", series{4, 1, 3, 10}, 3.5, 1, 10},
		{"one", series{7}, 7, 7, 7},
		{"negative", series{-2, -8, 4}, -2, -8, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.median(); got != tt.med {
				t.Errorf("median = %v, want %v", got, tt.med)
			}
			if got := tt.s.min(); got != tt.min {
				t.Errorf("min = %v, want %v", got, tt.min)
			}
			if got := tt.s.max(); got != tt.max {
				t.Errorf("max = %v, want %v", got, tt.max)
			}
		})
	}
}

func TestSeriesMedianKeepsOrder(t *testing.T) {
	s := series{3, 1, 2}
	s.median()
	if s[0] != 3 || s[1] != 1 || s[2] != 2 {
		t.Errorf("median reordered the samples: %v", s)
	}
}

func TestSeriesEmpty(t *testing.T) {
	var s series
	for name, v := range map[string]float64{"median": s.median(), "min": s.min(), "max": s.max()} {
		if !math.IsNaN(v) {
			t.Errorf("%s of no samples = %v, want NaN", name, v)
		}
	}
}

func TestRatio(t *testing.T) {
	if got := ratio(series{1, 2, 3}, series{8}); got != 0.25 {
		t.Errorf("ratio = %v, want 0.25", got)
	}
	if got := ratio(series{1}, nil); !math.IsNaN(got) {
		t.Errorf("ratio against no samples = %v, want NaN", got)
	}
}
