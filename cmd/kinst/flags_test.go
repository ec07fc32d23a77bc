package main

import (
	"slices"
	"testing"
)

func TestExpandFlags(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"-lv", "tracepoint:*"}, []string{"-l", "-v", "tracepoint:*"}},
		{[]string{"-lp", "42"}, []string{"-l", "-p", "42"}},
		{[]string{"-lvp", "42", "usdt:*"}, []string{"-l", "-v", "-p", "42", "usdt:*"}},
		{[]string{"-lp42"}, []string{"-l", "-p", "42"}},
		{[]string{"-p", "42", "-l"}, []string{"-p", "42", "-l"}},
		{[]string{"-e", "BEGIN {}", "-lq"}, []string{"-e", "BEGIN {}", "-l", "-q"}},
		{[]string{"--dry-run", "prog.bt", "-lp"}, []string{"--dry-run", "prog.bt", "-lp"}},
	}
	for _, tt := range tests {
		if got := expandFlags(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("expandFlags(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
