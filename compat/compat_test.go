package compat

import "testing"

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		err  string
	}{
		{"", Current, ""},
		{"0.26", Current, ""},
		{"0.26.1", Current, ""},
		{"0.17", V017, ""},
		{"0.17.0", V017, ""},
		{"0.170", Current, `unknown bpftrace version "0.170": kinst follows 0.26.1 by default, and 0.17 on request`},
		{"0.21", Current, `unknown bpftrace version "0.21": kinst follows 0.26.1 by default, and 0.17 on request`},
	} {
		got, err := Parse(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Parse(%q) error = %v, want %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("KINST_COMPAT", "0.17")
	if v, err := FromEnv(); err != nil || v != V017 {
		t.Errorf("FromEnv() = %v, %v; want 0.17", v, err)
	}
	t.Setenv("KINST_COMPAT", "2")
	if _, err := FromEnv(); err == nil || err.Error() != `KINST_COMPAT: unknown bpftrace version "2": kinst follows 0.26.1 by default, and 0.17 on request` {
		t.Errorf("FromEnv() error = %v", err)
	}
}
