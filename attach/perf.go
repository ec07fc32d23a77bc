package attach

import (
	"bufio"
	"fmt"
	"math"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// A perfCounter is one software or hardware event that software: and
// hardware: probes name. Count is the period bpftrace 0.17 uses when the
// attach point gives none.
type perfCounter struct {
	Name   string
	Alias  string
	Config uint64
	Count  uint64
}

// softwareEvents and hardwareEvents are the events bpftrace 0.17 names,
// with its default periods.
var (
	softwareEvents = []perfCounter{
		{"alignment-faults", "", unix.PERF_COUNT_SW_ALIGNMENT_FAULTS, 1},
		{"bpf-output", "", unix.PERF_COUNT_SW_BPF_OUTPUT, 1},
		{"context-switches", "cs", unix.PERF_COUNT_SW_CONTEXT_SWITCHES, 1000},
		{"cpu-clock", "cpu", unix.PERF_COUNT_SW_CPU_CLOCK, 1000000},
		{"cpu-migrations", "", unix.PERF_COUNT_SW_CPU_MIGRATIONS, 1},
		{"dummy", "", unix.PERF_COUNT_SW_DUMMY, 1},
		{"emulation-faults", "", unix.PERF_COUNT_SW_EMULATION_FAULTS, 1},
		{"major-faults", "", unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1},
		{"minor-faults", "", unix.PERF_COUNT_SW_PAGE_FAULTS_MIN, 100},
		{"page-faults", "faults", unix.PERF_COUNT_SW_PAGE_FAULTS, 100},
		{"task-clock", "", unix.PERF_COUNT_SW_TASK_CLOCK, 1000000},
	}
	hardwareEvents = []perfCounter{
		{"backend-stalls", "", unix.PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 1000000},
		{"branch-instructions", "branches", unix.PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 100000},
		{"branch-misses", "", unix.PERF_COUNT_HW_BRANCH_MISSES, 100000},
		{"bus-cycles", "", unix.PERF_COUNT_HW_BUS_CYCLES, 100000},
		{"cache-misses", "", unix.PERF_COUNT_HW_CACHE_MISSES, 1000000},
		{"cache-references", "", unix.PERF_COUNT_HW_CACHE_REFERENCES, 1000000},
		{"cpu-cycles", "cycles", unix.PERF_COUNT_HW_CPU_CYCLES, 1000000},
		{"frontend-stalls", "", unix.PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 1000000},
		{"instructions", "", unix.PERF_COUNT_HW_INSTRUCTIONS, 1000000},
		{"ref-cycles", "", unix.PERF_COUNT_HW_REF_CPU_CYCLES, 1000000},
	}
)

// perfEvents resolves software:EVENT[:COUNT] and hardware:EVENT[:COUNT].
// Each samples every CPU, one hit per COUNT events.
func perfEvents(ap *syntax.AttachPoint) ([]*check.Target, error) {
	events, typ := softwareEvents, uint32(unix.PERF_TYPE_SOFTWARE)
	if ap.Provider == "hardware" {
		events, typ = hardwareEvents, unix.PERF_TYPE_HARDWARE
	}
	if len(ap.Parts) < 1 || len(ap.Parts) > 2 {
		return nil, fmt.Errorf("%s probes are written %s:EVENT[:COUNT]", ap.Provider, ap.Provider)
	}
	i := slices.IndexFunc(events, func(e perfCounter) bool { return ap.Parts[0] == e.Name || ap.Parts[0] == e.Alias && e.Alias != "" })
	if i < 0 {
		return nil, &check.ListError{Err: fmt.Errorf("unknown %s event %q", ap.Provider, ap.Parts[0]), Pattern: ap.Provider + ":*", Listed: "them"}
	}
	ev := events[i]
	count := ev.Count
	if len(ap.Parts) == 2 {
		n, err := positive(ap.Provider+" count", ap.Parts[1], math.MaxInt64)
		if err != nil {
			return nil, err
		}
		count = n
	}
	feat := kernel.FeatPerfSoftware
	if ap.Provider == "hardware" {
		feat = kernel.FeatPerfHardware
	}
	if st := kernel.Probe(feat); !st.Available {
		return nil, forbidden(st.Reason)
	}
	name := strings.Join(ap.Parts, ":")
	return []*check.Target{{
		Provider: ap.Provider,
		Name:     name,
		Func:     name,
		Attach:   PerfEvent{Type: typ, Config: ev.Config, Period: count, AllCPUs: true},
	}}, nil
}

// listPerf lists a provider's events as bpftrace names them, the count
// left to the user.
func listPerf(provider string, events []perfCounter) lister {
	return func(w *bufio.Writer, parts []string, o ListOptions) error {
		// The event's name; a count after it is not part of it.
		pattern := "*"
		if len(parts) > 0 && parts[0] != "" {
			pattern = parts[0]
		}
		// An alias is listed on a line of its own after its event, as
		// bpftrace 0.26.1 lists it.
		for _, e := range events {
			if kernel.Match(pattern, e.Name) {
				fmt.Fprintf(w, "%s:%s:\n", provider, e.Name)
				if o.Verbose {
					fmt.Fprintf(w, "    count %d by default", e.Count)
					if e.Alias != "" {
						fmt.Fprintf(w, "; also %s:%s", provider, e.Alias)
					}
					fmt.Fprintln(w)
				}
			}
			if e.Alias != "" && kernel.Match(pattern, e.Alias) {
				fmt.Fprintf(w, "%s:%s:\n", provider, e.Alias)
			}
		}
		return nil
	}
}
