package kernel

import "testing"

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "vfs_read", true},
		{"vfs_read", "vfs_read", true},
		{"vfs_read", "vfs_readv", false},
		{"vfs_*", "vfs_read", true},
		{"vfs_*", "vfs_", true},
		{"vfs_*", "vf", false},
		{"*_read", "vfs_read", true},
		{"*_read", "vfs_readv", false},
		{"sys_enter_open*", "sys_enter_openat2", true},
		{"sys_enter_open*", "sys_exit_openat", false},
		{"*open*at*", "sys_enter_openat2", true},
		{"*a*b*c", "xaybzc", true},
		{"*a*b*c", "xaybzcx", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a?c", "abbc", false},
		{"??", "ab", true},
		{"*?", "", false},
		{"**", "x", true},
		{"operator[]", "operator[]", true}, // '[' is literal
		{"a\\b", "a\\b", true},             // so is '\'
		{"sys_*_*_open", "sys_x_y_open", true},
		{"sys_*_*_open", "sys_x_open", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestHasGlob(t *testing.T) {
	for s, want := range map[string]bool{"vfs_read": false, "vfs_*": true, "a?": true, "": false, "x[1]": false} {
		if got := HasGlob(s); got != want {
			t.Errorf("HasGlob(%q) = %v, want %v", s, got, want)
		}
	}
}
