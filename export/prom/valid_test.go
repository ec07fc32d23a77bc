package prom

import "testing"

func TestValidLabel(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"comm", true}, {"_x9", true}, {"Fd_2", true}, {"a", true},
		{"", false}, {"9a", false}, {"a-b", false}, {"é", false}, {"a b", false}, {"a:b", false},
	}
	for _, tt := range tests {
		if got := validLabel(tt.name); got != tt.want {
			t.Errorf("validLabel(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
