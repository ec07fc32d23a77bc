package check

import (
	"fmt"
	"strings"

	"kinst.dev/kinst/syntax"
)

// runByKinst reports whether probes of provider run in kinst's own
// process, by BPF_PROG_TEST_RUN, rather than where the kernel interrupts
// code: BEGIN and END, and the test and bench probes of bpftrace 0.26.1,
// which --test and --bench run.
func runByKinst(provider string) bool {
	switch provider {
	case "BEGIN", "END", "test", "bench":
		return true
	}
	return false
}

// isTestOrBench reports whether probes of provider are test or bench
// probes, which run only in the mode of their kind.
func isTestOrBench(provider string) bool {
	return provider == "test" || provider == "bench"
}

// namedTargets resolves test:NAME and bench:NAME. Each has exactly one
// name, used by no other probe of its kind, as bpftrace 0.26.1 requires:
// the name is what the results print.
func (c *checker) namedTargets(ap *syntax.AttachPoint) ([]*Target, error) {
	if len(ap.Parts) != 1 {
		return nil, fmt.Errorf("%s probe type requires 1 arguments, found %d", ap.Provider, len(ap.Parts))
	}
	expanded, err := c.expandParams(ap)
	if err != nil {
		return nil, err
	}
	name := expanded.Parts[0]
	if name == "" {
		return nil, fmt.Errorf("%s probes must have a name", ap.Provider)
	}
	key := ap.Provider + ":" + name
	if other, ok := c.named[key]; ok {
		p := c.file.Position(other.Pos())
		return nil, fmt.Errorf("%q was used as the name for more than one %s probe; the other instance is at line %d, column %d",
			name, strings.ToUpper(ap.Provider), p.Line, p.Column)
	}
	if c.named == nil {
		c.named = map[string]*syntax.AttachPoint{}
	}
	c.named[key] = ap
	return []*Target{{Provider: ap.Provider, Name: name, Func: name, Point: ap}}, nil
}
