package kernel

import (
	"strconv"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	v := Version{6, 1, 76}
	if v.String() != "6.1.76" {
		t.Errorf("String() = %q", v.String())
	}
	for _, tt := range []struct {
		major, minor int
		want         bool
	}{{5, 18, true}, {6, 1, true}, {6, 2, false}, {7, 0, false}, {4, 19, true}} {
		if got := v.AtLeast(tt.major, tt.minor); got != tt.want {
			t.Errorf("%v.AtLeast(%d, %d) = %v, want %v", v, tt.major, tt.minor, got, tt.want)
		}
	}
}

func TestKernelVersionMatchesRelease(t *testing.T) {
	v, err := KernelVersion()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	// The release starts "major.minor"; distributions may put another
	// number after it than the real patch level.
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("release %q", rel)
	}
	major, _ := strconv.Atoi(parts[0])
	minor, _ := strconv.Atoi(strings.TrimRightFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	if v.Major != major || v.Minor != minor {
		t.Errorf("KernelVersion() = %v, release %q", v, rel)
	}
}
