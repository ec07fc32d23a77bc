package elfsym

import "testing"

func TestPathEndsWith(t *testing.T) {
	for _, tc := range []struct {
		path, suffix string
		want         bool
	}{
		{"/src/prog/a.c", "a.c", true},
		{"/src/prog/a.c", "prog/a.c", true},
		{"/src/prog/a.c", "./prog/a.c", true},
		{"/src/prog/a.c", "/src/prog/a.c", true},
		{"/src/prog/a.c", "c", false},
		{"/src/prog/ba.c", "a.c", false},
		{"/src/prog/a.c", "other/a.c", false},
		{"a.c", "src/a.c", false},
	} {
		if got := pathEndsWith(tc.path, tc.suffix); got != tc.want {
			t.Errorf("pathEndsWith(%q, %q) = %v, want %v", tc.path, tc.suffix, got, tc.want)
		}
	}
}
