package hwbp

import (
	"errors"
	"os"
	"testing"
)

// TestProbe: as root the probe answers, one way or the other, with no
// other error: perf_event_open of a breakpoint needs no privilege a root
// process lacks.
func TestProbe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	err := Probe()
	if err != nil && !errors.Is(err, ErrNeverFires) {
		t.Fatal(err)
	}
	t.Logf("Probe() = %v", err)
}
