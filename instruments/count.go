package instruments

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"kinst.dev/kinst"
	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/output"
)

func init() {
	register(&Command{
		Name:    "count",
		Summary: "count the calls of functions, tracepoints and system calls, at the end or every interval",
		Run:     count,
	})
}

// countMap is the map the count program counts in.
const countMap = "@calls"

func count(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := c.flags("count", stderr,
		"usage: kinst count PATTERN... [--interval D] [--top N] [--order-file FILE] [--pid PID] [--comm NAME] [-c CMD] [--duration D] [-f text|json] [-o FILE] [--show]",
		"PATTERN is a kernel function or wildcard (vfs_*, kprobe:tcp_*), uprobe:PATH:FUNC, syscall:NAME or tracepoint:CAT:NAME, with * wildcards",
	)
	interval := fs.Duration("interval", 0, "print the calls of each interval, for example 1s, instead of the total at the end")
	top := fs.Int("top", 0, "print only the `N` most called")
	orderFile := fs.String("order-file", "", "write the functions of the uprobe:PATH:FUNC targets that ran to `FILE`, most called first, one symbol a line, for lld --symbol-ordering-file")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError("name at least one function or pattern to count")
	}
	if *interval < 0 || *interval > 0 && *interval < time.Millisecond {
		return usageError("--interval %v is too short: at least 1ms", *interval)
	}
	if *top < 0 {
		return usageError("--top %d: give a positive number of rows", *top)
	}
	var targets []probeTarget
	// What the probes resolve to, by the name the probe builtin gives
	// them: the keys of the count map.
	resolved := map[string]*check.Target{}
	r := &attach.Resolver{Pid: c.Pid}
	seen := map[string]bool{}
	program := ""
	for _, p := range pos {
		t, err := parseTarget(p)
		if err != nil {
			return usageError("%v", err)
		}
		if *orderFile != "" {
			if program, err = orderable(program, t); err != nil {
				return usageError("--order-file: %v", err)
			}
		}
		if seen[t.Entry] {
			continue // attached twice, it would count twice
		}
		seen[t.Entry] = true
		// Resolved here, a bad target fails in one sentence rather
		// than as an error in the generated program.
		points, err := resolvePoint(r, t.Entry)
		if err != nil {
			return fmt.Errorf("count %s: %w", p, err)
		}
		for _, pt := range points {
			resolved[pt.FullName()] = pt
		}
		targets = append(targets, t)
	}
	src := countProgram(&c, targets, *interval)
	if c.Show {
		return c.run(ctx, "count", src, runHooks{}, stdout, stderr)
	}
	var order *os.File
	if *orderFile != "" {
		// Opened now, a path that cannot be written fails before the
		// run rather than after it.
		f, err := os.OpenFile(*orderFile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("--order-file: %w", err)
		}
		defer f.Close()
		order = f
	}

	out := stdout
	if c.Output != "" {
		// As common.run opens it: a named pipe blocks here until its
		// reader comes.
		f, err := output.Create(c.Output)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	table := &countTable{json: c.Format == "json", top: *top, last: map[string]uint64{}, targets: resolved}
	// The tables go to out as they come, so the run's own output,
	// which holds nothing else, is thrown away.
	run := c
	run.Output = ""
	hooks := runHooks{
		PrintMap: func(_ io.Writer, m *kinst.Map) error {
			return table.print(out, callsOf([]*kinst.Map{m}))
		},
		ExitMaps: func(_ io.Writer, maps []*kinst.Map) error {
			calls := callsOf(maps)
			if order != nil {
				if err := writeOrder(order, calls, resolved); err != nil {
					return fmt.Errorf("--order-file: %w", err)
				}
			}
			return table.print(out, calls)
		},
		Lost: func(w io.Writer, n uint64) error {
			// The tables come from running counts: the next one
			// covers the calls of those lost.
			_, err := fmt.Fprintf(w, "kinst count: %d interval tables lost, their calls are in the next\n", n)
			return err
		},
	}
	return run.run(ctx, "count", src, hooks, io.Discard, stderr)
}

// callsOf reads the running counts per probe from the count map.
func callsOf(maps []*kinst.Map) map[string]uint64 {
	calls := map[string]uint64{}
	for _, m := range maps {
		if m.Name != countMap {
			continue
		}
		for _, e := range m.Entries {
			if len(e.Key) == 1 {
				probe, _ := e.Key[0].(string)
				calls[probe], _ = e.Value.(uint64)
			}
		}
	}
	return calls
}

// orderable checks that a target is a function of the program the
// targets before it are in, "" for none, since a link orders one
// program; it returns that program.
func orderable(program string, t probeTarget) (string, error) {
	provider, rest, _ := strings.Cut(t.Entry, ":")
	i := strings.LastIndexByte(rest, ':')
	if provider != "uprobe" || i < 0 {
		return "", fmt.Errorf("%s is not a function of a user program: name uprobe:PATH:FUNC targets", t.Spec)
	}
	if program != "" && rest[:i] != program {
		return "", fmt.Errorf("the targets are in %s and %s: a symbol ordering file is for the link of one program", program, rest[:i])
	}
	return rest[:i], nil
}

// writeOrder writes a symbol ordering file: the functions that ran, one
// name a line, most called first, equals by name. lld reads it with
// --symbol-ordering-file; gold's --section-ordering-file takes section
// names, which -ffunction-sections makes .text.NAME. The functions are
// those of the probes' targets, so that a probe inside a function
// (FUNC+OFFSET) counts for the function.
func writeOrder(w io.Writer, calls map[string]uint64, targets map[string]*check.Target) error {
	type fn struct {
		name  string
		calls uint64
	}
	byName := map[string]uint64{}
	for probe, n := range calls {
		if t := targets[probe]; t != nil && n > 0 {
			byName[t.Func] += n
		}
	}
	var fns []fn
	for name, n := range byName {
		fns = append(fns, fn{name, n})
	}
	slices.SortFunc(fns, func(a, b fn) int {
		if c := cmp.Compare(b.calls, a.calls); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var b []byte
	for _, f := range fns {
		b = append(b, f.name...)
		b = append(b, '\n')
	}
	_, err := w.Write(b)
	return err
}

// countProgram counts the calls of every target per probe; with an
// interval it prints the running counts every interval.
func countProgram(c *common, targets []probeTarget, interval time.Duration) string {
	var b strings.Builder
	points := make([]string, len(targets))
	for i, t := range targets {
		points[i] = t.Entry
	}
	fmt.Fprintf(&b, "%s%s {\n\t%s[probe] = count();\n}\n", strings.Join(points, ",\n"), predClause(c.predicate()), countMap)
	if interval > 0 {
		fmt.Fprintf(&b, "\ninterval:ms:%d {\n\tprint(%s);\n}\n", interval.Milliseconds(), countMap)
	}
	if stop := c.stop(); stop != "" {
		b.WriteString("\n" + stop)
	}
	return b.String()
}

// countTable prints the calls made since the previous table, most
// called first.
type countTable struct {
	json bool
	top  int
	last map[string]uint64 // the running counts at the previous table
	// targets are what the probes resolved to, by full name.
	targets map[string]*check.Target
	names   describer
}

// name is the function of a probe, as the table names it.
func (t *countTable) name(probe string) string {
	if target := t.targets[probe]; target != nil {
		return t.names.describe(target).name
	}
	return probe
}

type countRow struct {
	probe string
	name  string
	calls uint64
}

// print prints one table from the running counts.
func (t *countTable) print(w io.Writer, calls map[string]uint64) error {
	var rows []countRow
	for probe, n := range calls {
		if d := n - t.last[probe]; d > 0 {
			rows = append(rows, countRow{probe: probe, name: t.name(probe), calls: d})
		}
		t.last[probe] = n
	}
	slices.SortFunc(rows, func(a, b countRow) int {
		if a.calls != b.calls {
			if a.calls > b.calls {
				return -1
			}
			return 1
		}
		return strings.Compare(a.probe, b.probe)
	})
	if t.top > 0 && len(rows) > t.top {
		rows = rows[:t.top]
	}
	// Two probes in one function (a kprobe and a tracepoint, or two
	// binaries' uprobes) are told apart by their full names.
	names := map[string]int{}
	for _, r := range rows {
		names[r.name]++
	}
	for i := range rows {
		if names[rows[i].name] > 1 {
			rows[i].name = rows[i].probe
		}
	}
	now := time.Now()
	var b []byte
	if t.json {
		w := jsonWriter{b: b}
		w.open('{')
		w.key("time")
		w.str(now.Format(jsonTime))
		w.key("counts")
		w.open('[')
		for _, r := range rows {
			w.open('{')
			w.key("function")
			w.str(r.name)
			w.key("probe")
			w.str(r.probe)
			w.key("calls")
			w.uint(r.calls)
			w.close('}')
		}
		w.close(']')
		w.close('}')
		b = append(w.b, '\n')
	} else {
		width := len("FUNCTION")
		for _, r := range rows {
			width = max(width, len(r.name))
		}
		b = now.AppendFormat(b, "15:04:05\n")
		b = fmt.Appendf(b, "%-*s %12s\n", width, "FUNCTION", "CALLS")
		for _, r := range rows {
			b = fmt.Appendf(b, "%-*s %12d\n", width, r.name, r.calls)
		}
		b = append(b, '\n')
	}
	_, err := w.Write(b)
	return err
}
