package instruments

import (
	"fmt"
	"strings"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// traceHeader is the header of the text log, which BEGIN prints.
const traceHeader = "TIME               CPU     PID     TID COMM             CALL\n"

// traceProgram writes the kinst program for the targets, and the
// layout of each printf record it makes, by the probe that makes it.
// Each thread
// keeps, per target, a stack of the calls it is inside: an entry
// pushes its time, and the exit pops it, so nested and recursive calls
// each get their own duration. An exit whose entry was not seen (the
// call began before the probes were attached) is not logged.
//
// A single function's records are its probe's; a wildcard's records
// carry the probe that fired.
func traceProgram(c *common, specs []*traceSpec) (string, map[string]*traceRecord) {
	records := map[string]*traceRecord{}
	var b strings.Builder
	if c.Format == "text" {
		fmt.Fprintf(&b, "BEGIN {\n\tprintf(%s);\n}\n\n", syntax.Quote(traceHeader))
		records["BEGIN"] = &traceRecord{kind: headerRecord}
	}
	pred := c.predicate()
	for k, s := range specs {
		arrow := "->"
		if s.Exit == "" {
			arrow = "--"
		}
		entryFmt, entryArgs := traceFields(s, arrow, s.entry)
		for _, a := range s.args {
			entryFmt += " " + a.name + "=" + a.fmt.verb()
			entryArgs += ", " + a.expr
		}
		if s.stack != "" {
			entryFmt += "%s"
			entryArgs += ", " + s.stack
		}
		entryFmt += "\n"
		kind := entryRecord
		if s.Exit == "" {
			kind = hitRecord
		}
		records[s.Entry] = &traceRecord{kind: kind, target: s.entry, targets: byName(s.entries), args: s.args, stack: s.stack != ""}

		fmt.Fprintf(&b, "// %s\n", s.Spec)
		fmt.Fprintf(&b, "%s%s {\n", s.Entry, predClause(pred))
		if s.Exit == "" {
			// Nothing returns, so there is no call to keep track of.
			b.WriteString("\t$t = nsecs;\n\t$d = 0;\n")
		} else {
			fmt.Fprintf(&b, "\t$t = nsecs;\n\t$d = @__depth[tid, %d]++;\n\t@__start[tid, %d, $d] = $t;\n", k, k)
		}
		fmt.Fprintf(&b, "\tprintf(%s, %s);\n}\n\n", syntax.Quote(entryFmt), entryArgs)
		if s.Exit == "" {
			continue
		}

		exitFmt, exitArgs := traceFields(s, "<-", s.exit)
		if s.retval != "" {
			exitFmt += " ret=" + s.retFmt.verb()
			exitArgs += ", " + s.retval
		}
		exitFmt += " duration=%llu\n"
		exitArgs += ", $t - $s"
		records[s.Exit] = &traceRecord{kind: exitRecord, target: s.exit, targets: byName(s.exits), ret: s.retval != "", retFmt: s.retFmt}

		// One lookup of the depth, and each element deleted when its
		// call returns, so that the maps hold only the calls in progress.
		fmt.Fprintf(&b, "%s%s {\n", s.Exit, predClause(pred))
		fmt.Fprintf(&b, "\t$t = nsecs;\n\t$d = @__depth[tid, %d] - 1;\n\tif ($d >= 0) {\n", k)
		fmt.Fprintf(&b, "\t\t$s = @__start[tid, %d, $d];\n\t\tdelete(@__start[tid, %d, $d]);\n", k, k)
		fmt.Fprintf(&b, "\t\tif ($d == 0) {\n\t\t\tdelete(@__depth[tid, %d]);\n\t\t} else {\n\t\t\t@__depth[tid, %d] = $d;\n\t\t}\n", k, k)
		fmt.Fprintf(&b, "\t\tprintf(%s, %s);\n\t}\n}\n\n", syntax.Quote(exitFmt), exitArgs)
	}
	b.WriteString(traceCleanup(specs))
	src := b.String()
	if stop := c.stop(); stop != "" {
		src += stop
	} else {
		src = strings.TrimSuffix(src, "\n")
	}
	return src, records
}

// byName indexes a wildcard's targets by their full names, as the probe
// builtin gives them; nil for none.
func byName(targets []*check.Target) map[string]*check.Target {
	if targets == nil {
		return nil
	}
	m := make(map[string]*check.Target, len(targets))
	for _, t := range targets {
		m[t.FullName()] = t
	}
	return m
}

// maxCleanup bounds the calls a thread is inside when it ends that the
// cleanup forgets; the verifier needs a bound.
const maxCleanup = 64

// traceCleanup is the probe that forgets the calls a thread was inside
// when it ended, which never return (exit_group, do_exit): otherwise
// they would stay in the maps, and enough of them would fill the maps
// and keep later calls from being logged. It is "" when no target
// returns.
func traceCleanup(specs []*traceSpec) string {
	var b strings.Builder
	for k, s := range specs {
		if s.Exit == "" {
			continue
		}
		fmt.Fprintf(&b, "\t$d = @__depth[tid, %d];\n\t$i = 0;\n\twhile ($d > 0 && $i < %d) {\n", k, maxCleanup)
		fmt.Fprintf(&b, "\t\t$d = $d - 1;\n\t\t$i = $i + 1;\n\t\tdelete(@__start[tid, %d, $d]);\n\t}\n", k)
		fmt.Fprintf(&b, "\tdelete(@__depth[tid, %d]);\n", k)
	}
	if b.Len() == 0 {
		return ""
	}
	return "// A thread that ends inside calls never returns from them.\ntracepoint:sched:sched_process_exit {\n" + b.String() + "}\n\n"
}

// traceFields is the start of a record's format and arguments: the
// common fields, with the target's name, or the probe that fired where
// the probe has several targets.
func traceFields(s *traceSpec, arrow string, target *check.Target) (format, args string) {
	if target == nil {
		return "%llu cpu=%llu pid=%llu tid=%llu comm=%s depth=%lld " + arrow + " %s",
			"$t, cpu, pid, tid, comm, $d, probe"
	}
	return "%llu cpu=%llu pid=%llu tid=%llu comm=%s depth=%lld " + arrow + " " + s.Spec,
		"$t, cpu, pid, tid, comm, $d"
}
