package spell

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b  string
		limit int
		want  int
	}{
		{"malloc", "malloc", 5, 0},
		{"mallc", "malloc", 5, 1},
		{"mallco", "malloc", 5, 2},
		{"", "abc", 5, 3},
		{"kitten", "sitting", 5, 3},
		{"kitten", "sitting", 2, 2},
		{"a", "abcdefgh", 3, 3},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b, tt.limit); got != tt.want {
			t.Errorf("Distance(%q, %q, %d) = %d, want %d", tt.a, tt.b, tt.limit, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	words := []string{"count", "latency", "profile", "trace"}
	tests := []struct{ name, want string }{
		{"latncy", "latency"},
		{"Trace", "trace"},
		{"cuont", "count"},
		{"xyz", ""},
		{"blocks", ""},
	}
	for _, tt := range tests {
		if got := Nearest(tt.name, words); got != tt.want {
			t.Errorf("Nearest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
