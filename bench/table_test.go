package main

import (
	"strings"
	"testing"
)

func TestCell(t *testing.T) {
	tests := []struct {
		u    unit
		s    series
		want string
	}{
		{nanos, nil, "-"},
		{nanos, series{250}, "250 ns"},
		{nanos, series{87.5}, "87.5 ns"},
		{nanos, series{3_120_000, 2_950_000, 4_100_000}, "3.12 ms (2.95-4.10)"},
		{nanos, series{251e6, 249e6, 262.4e6}, "251 ms (249-262)"},
		{nanos, series{1.5e9, 1.5e9}, "1.50 s"},
		{nanos, series{12_345}, "12.3 µs"},
		{byteSize, series{22 << 20, 21.5 * (1 << 20)}, "21.8 MiB (21.5-22)"},
		{byteSize, series{512}, "512 B"},
		{byteSize, series{3 << 10}, "3 KiB"},
		{byteSize, series{-24576}, "-24 KiB"},
		{perSecond, series{760_000, 642_000, 1_168_000}, "760 k/s (642-1168)"},
		{perSecond, series{2_500_000}, "2.50 M/s"},
		{number, series{0, 0, 0}, "0"},
		{number, series{23}, "23"},
	}
	for _, tt := range tests {
		if got := tt.u.cell(tt.s); got != tt.want {
			t.Errorf("cell(%v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestVerdict(t *testing.T) {
	tests := []struct {
		name string
		r    row
		want string
	}{
		{"median met", row{kinst: series{8e6, 9e6, 30e6}, target: kinstMedianAtMost(10e6, "")}, "met"},
		{"median missed", row{kinst: series{11e6}, target: kinstMedianAtMost(10e6, "")}, "MISSED"},
		{"peak missed", row{kinst: series{20, 20, 31}, target: kinstPeakAtMost(30, "")}, "MISSED"},
		{"peak met", row{kinst: series{20, 30}, target: kinstPeakAtMost(30, "")}, "met"},
		{"ratio at most", row{kinst: series{300}, bpftrace: series{400}, target: ratioAtMost(1)}, "met"},
		{"ratio at most missed", row{kinst: series{500}, bpftrace: series{400}, target: ratioAtMost(1)}, "MISSED"},
		{"ratio at least", row{kinst: series{700}, bpftrace: series{100}, target: ratioAtLeast(2)}, "met"},
		{"ratio at least missed", row{kinst: series{150}, bpftrace: series{100}, target: ratioAtLeast(2)}, "MISSED"},
		{"no bpftrace", row{kinst: series{700}, target: ratioAtLeast(2)}, "n/a"},
		{"no kinst", row{bpftrace: series{1}, target: kinstMedianAtMost(1, "")}, "n/a"},
		{"no target", row{kinst: series{1}}, ""},
	}
	for _, tt := range tests {
		if got := tt.r.verdict(); got != tt.want {
			t.Errorf("%s: verdict = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestPrintTable(t *testing.T) {
	rows := []*row{
		{name: "BEGIN wall", unit: nanos, kinst: series{4e6, 3e6, 5e6}, bpftrace: series{250e6}, target: kinstMedianAtMost(10e6, "kinst <= 10 ms")},
		{name: "printf rate", unit: perSecond, kinst: series{800e3}, target: ratioAtLeast(2)},
		{name: "lost", unit: number, kinst: series{0}, bpftrace: series{0}},
	}
	var b strings.Builder
	if err := printTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"ITEM         KINST       BPFTRACE  KINST/BPFTRACE  TARGET          VERDICT\n" +
		"BEGIN wall   4 ms (3-5)  250 ms    0.016           kinst <= 10 ms  met\n" +
		"printf rate  800 k/s     -         -               ratio >= 2      n/a\n" +
		"lost         0           0         -                               \n"
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}
