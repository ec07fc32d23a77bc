package compat

import (
	"fmt"
	"os"
	"strings"
)

// A Version is a release of bpftrace whose behaviour kinst follows. The
// zero value is the default, Current.
type Version uint8

const (
	// Current is bpftrace 0.26.1.
	Current Version = iota
	// V017 is bpftrace 0.17.
	V017
)

func (v Version) String() string {
	if v == V017 {
		return "0.17"
	}
	return "0.26.1"
}

// Parse reads a version as --compat and KINST_COMPAT give it: "0.17"
// (or a 0.17.x release) or "0.26" (or 0.26.x, or empty) for the default.
func Parse(s string) (Version, error) {
	switch {
	case s == "", s == "0.26", strings.HasPrefix(s, "0.26."):
		return Current, nil
	case s == "0.17", strings.HasPrefix(s, "0.17."):
		return V017, nil
	}
	return Current, fmt.Errorf("unknown bpftrace version %q: kinst follows 0.26.1 by default, and 0.17 on request", s)
}

// FromEnv reads KINST_COMPAT.
func FromEnv() (Version, error) {
	v, err := Parse(os.Getenv("KINST_COMPAT"))
	if err != nil {
		return v, fmt.Errorf("KINST_COMPAT: %w", err)
	}
	return v, nil
}
