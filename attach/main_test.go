package attach_test

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// The outputs the tests read ("Attaching N probes..." on standard
	// output) are bpftrace 0.17's: the command runs in its 0.17 mode
	// unless a test sets KINST_COMPAT itself.
	if _, set := os.LookupEnv("KINST_COMPAT"); !set {
		os.Setenv("KINST_COMPAT", "0.17")
	}
	os.Exit(m.Run())
}
