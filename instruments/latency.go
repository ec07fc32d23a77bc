package instruments

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"regexp"
	"strconv"
	"strings"

	"kinst.dev/kinst"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/output"
)

func init() {
	register(&Command{
		Name:    "latency",
		Summary: "wall and on-CPU time of each call, as histograms and stats",
		Run:     latency,
	})
}

func latency(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := c.flags("latency", stderr,
		"usage: kinst latency FUNC... [--per-process] [--pid PID] [--comm NAME] [-c CMD] [--duration D] [-f text|json] [-o FILE] [--show]",
		"FUNC is a kernel function (vfs_read, kprobe:vfs_*), uprobe:PATH:FUNC, syscall:NAME or a tracepoint:syscalls:sys_enter_NAME",
	)
	perProcess := fs.Bool("per-process", false, "keep the times per process as well as per function")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError("name at least one function to time")
	}
	var targets []probeTarget
	for _, spec := range pos {
		t, err := parseTarget(spec)
		if err != nil {
			return usageError("%v", err)
		}
		if t.Entry == "" || t.Exit == "" {
			return usageError("%s has no return to time: latency needs a function or a system call", spec)
		}
		targets = append(targets, t)
	}
	src := latencyProgram(&c, targets, *perProcess)
	hooks := runHooks{ExitMaps: func(w io.Writer, maps []*kinst.Map) error {
		ow := output.NewText(w, compat.V017)
		if c.Format == "json" {
			ow = output.NewJSON(w, compat.V017)
		}
		return ow.Maps(mergeLatency(maps, targets))
	}}
	return c.run(ctx, "latency", src, hooks, stdout, stderr)
}

// latencyProgram times every call of the targets. Each thread keeps a
// stack of the calls it is inside, so nested and recursive calls are
// timed apart; sched_switch adds up the time each such thread spends
// switched out, and a call's on-CPU time is its wall time less what
// was added while it ran.
func latencyProgram(c *common, targets []probeTarget, perProcess bool) string {
	var b strings.Builder
	entries := make([]string, len(targets))
	for i, t := range targets {
		entries[i] = t.Entry
	}
	fmt.Fprintf(&b, "%s%s {\n", strings.Join(entries, ",\n"), predClause(c.predicate()))
	b.WriteString("\t@__depth[tid]++;\n")
	b.WriteString("\t@__start[tid, @__depth[tid]] = nsecs;\n")
	b.WriteString("\t@__off0[tid, @__depth[tid]] = @__off[tid];\n")
	b.WriteString("}\n\n")
	for i, t := range targets {
		// Each target has maps of its own, whose key types then agree:
		// none for a single function, the function a wildcard matched
		// (func, or probe for tracepoints). mergeLatency names them.
		var keys []string
		if strings.Contains(t.Spec, "*") {
			if strings.HasPrefix(t.Exit, "tracepoint:") {
				keys = append(keys, "probe")
			} else {
				keys = append(keys, "func")
			}
		}
		if perProcess {
			keys = append(keys, "pid", "comm")
		}
		key := ""
		if len(keys) > 0 {
			key = "[" + strings.Join(keys, ", ") + "]"
		}
		fmt.Fprintf(&b, "%s /@__depth[tid] > 0/ {\n", t.Exit)
		b.WriteString("\t$d = @__depth[tid];\n")
		b.WriteString("\t$wall = nsecs - @__start[tid, $d];\n")
		b.WriteString("\t$oncpu = $wall - (@__off[tid] - @__off0[tid, $d]);\n")
		for _, m := range []struct{ name, agg, v string }{
			{"wall", "stats", "$wall"}, {"wall_ns", "hist", "$wall"},
			{"oncpu", "stats", "$oncpu"}, {"oncpu_ns", "hist", "$oncpu"},
		} {
			fmt.Fprintf(&b, "\t@%s_%d%s = %s(%s);\n", m.name, i, key, m.agg, m.v)
		}
		b.WriteString("\tdelete(@__start[tid, $d]);\n")
		b.WriteString("\tdelete(@__off0[tid, $d]);\n")
		b.WriteString("\t@__depth[tid]--;\n")
		b.WriteString("\tif (@__depth[tid] == 0) {\n\t\tdelete(@__depth[tid]);\n\t\tdelete(@__off[tid]);\n\t}\n")
		b.WriteString("}\n\n")
	}
	b.WriteString("tracepoint:sched:sched_switch {\n")
	b.WriteString("\tif (@__depth[args->prev_pid] > 0) {\n\t\t@__out[args->prev_pid] = nsecs;\n\t}\n")
	b.WriteString("\tif (@__out[args->next_pid] > 0) {\n")
	b.WriteString("\t\t@__off[args->next_pid] += nsecs - @__out[args->next_pid];\n")
	b.WriteString("\t\tdelete(@__out[args->next_pid]);\n\t}\n")
	b.WriteString("}\n")
	if stop := c.stop(); stop != "" {
		b.WriteString("\n" + stop)
	}
	return b.String()
}

// latencyMap reads a per-target map name such as @wall_ns_2.
var latencyMap = regexp.MustCompile(`^@(wall|wall_ns|oncpu|oncpu_ns)_(\d+)$`)

// mergeLatency gathers the per-target maps into @wall, @wall_ns, @oncpu
// and @oncpu_ns keyed by function, leaving out the bookkeeping maps, to
// be printed as bpftrace prints maps.
func mergeLatency(maps []*kinst.Map, targets []probeTarget) []*output.Map {
	merged := map[string]*output.Map{}
	var out []*output.Map
	for _, m := range maps {
		sub := latencyMap.FindStringSubmatch(m.Name)
		if sub == nil {
			continue
		}
		i, _ := strconv.Atoi(sub[2])
		name := "@" + sub[1]
		mm := merged[name]
		if mm == nil {
			mm = &output.Map{Name: name, Kind: output.KindStats}
			if strings.HasSuffix(name, "_ns") {
				mm.Kind = output.KindHist
			}
			merged[name] = mm
			out = append(out, mm)
		}
		for _, e := range m.Entries {
			var key []output.Value
			if !strings.Contains(targets[i].Spec, "*") {
				key = append(key, output.String(targets[i].Spec))
			}
			for _, k := range e.Key {
				key = append(key, latencyKey(k))
			}
			mm.Entries = append(mm.Entries, output.Entry{Key: key, Value: latencyValue(e.Value)})
		}
	}
	return out
}

// latencyKey is a key element of the latency maps, a function or probe
// name, a pid or a comm, as the output writer takes it.
func latencyKey(k any) output.Value {
	switch k := k.(type) {
	case uint64:
		return output.Uint(k)
	case int64:
		return output.Int(k)
	}
	return output.String(fmt.Sprint(k))
}

// latencyValue is a value of the latency maps, stats() or hist(), as
// the output writer takes it: a hist()'s buckets as their counts, below
// zero, zero, then by powers of two.
func latencyValue(v any) output.Value {
	switch v := v.(type) {
	case kinst.Stats:
		return output.Stats(v.Count, v.Total)
	case kinst.Histogram:
		var counts []uint64
		for _, b := range v.Buckets {
			i := 0
			switch {
			case b.Min < 0:
			case b.Max == 0:
				i = 1
			default:
				i = bits.Len64(uint64(b.Min)) + 1
			}
			for len(counts) <= i {
				counts = append(counts, 0)
			}
			counts[i] = b.Count
		}
		return output.Hist(counts)
	}
	return output.Int(0)
}
