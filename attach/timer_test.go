package attach

import (
	"testing"

	"kinst.dev/kinst/syntax"
)

// TestTimerForms: bpftrace 0.26.1's one-part interval and profile
// periods, with units or in nanoseconds, beside the unit:N form.
func TestTimerForms(t *testing.T) {
	tests := []struct {
		spec string
		name string // the target's name, or the error
		per  uint64
	}{
		{"interval:1s", "us:1000000", 1e9},
		{"interval:100ms", "us:100000", 1e8},
		{"interval:1000000", "us:1000", 1e6},
		{"profile:20us", "us:20", 20e3},
		{"interval:2m", "us:120000000", 120e9},
		{"interval:s:1", "s:1", 1e9},
		{"interval:500", "invalid rate of interval probe: the minimum is 1000 or 1us, not 500 nanoseconds", 0},
		{"interval:1x", `invalid rate of interval probe: "1x" is not a whole number of ns, us, ms, s, m, h or d`, 0},
		{"interval:s", `invalid rate of interval probe: "s" is not a whole number of ns, us, ms, s, m, h or d`, 0},
		{"profile:1us", "us:1", 1000},
	}
	for _, tt := range tests {
		prog, err := syntax.Parse("t", []byte(tt.spec+" { }"))
		if err != nil {
			t.Fatal(err)
		}
		targets, err := timer(prog.Probes[0].Points[0])
		if err != nil {
			if err.Error() != tt.name {
				t.Errorf("%s: %v, want %s", tt.spec, err, tt.name)
			}
			continue
		}
		ev := targets[0].Attach.(PerfEvent)
		if targets[0].Name != tt.name || ev.Period != tt.per {
			t.Errorf("%s: %s every %dns, want %s every %dns", tt.spec, targets[0].Name, ev.Period, tt.name, tt.per)
		}
	}
}
