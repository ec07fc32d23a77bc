package check

import (
	"fmt"
	"strings"

	"kinst.dev/kinst/syntax"
)

// selfTargets resolves self:signal:SIGUSR1, a probe that runs when kinst
// receives the signal (bpftrace 0.26); SIGUSR1 is the only signal it
// takes, as in bpftrace.
func selfTargets(ap *syntax.AttachPoint) ([]*Target, error) {
	if len(ap.Parts) != 2 || ap.Parts[0] != "signal" {
		return nil, fmt.Errorf("self probes are written self:signal:SIGUSR1")
	}
	if ap.Parts[1] != "SIGUSR1" {
		return nil, fmt.Errorf("self:signal takes SIGUSR1 only, not %s", ap.Parts[1])
	}
	return []*Target{{Provider: "self", Name: strings.Join(ap.Parts, ":"), Func: ap.Parts[1]}}, nil
}
