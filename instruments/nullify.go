package instruments

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"kinst.dev/kinst"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/kernel"
)

func init() {
	register(&Command{
		Name:    "nullify",
		Summary: "skip a kernel function's body and return a chosen value instead (needs --unsafe)",
		Run:     nullify,
	})
}

// errorInjectionList is where the kernel lists the functions marked
// ALLOW_ERROR_INJECTION.
const errorInjectionList = "/sys/kernel/debug/error_injection/list"

func nullify(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := c.flags("nullify", stderr,
		"usage: kinst nullify FUNC --return VALUE --unsafe [--pid PID] [--comm NAME] [-c CMD] [--if EXPR] [--duration D] [-q] [--show]",
	)
	ret := fs.String("return", "", "the `VALUE` the function returns instead")
	cond := fs.String("if", "", "only calls where this kinst `EXPRESSION` holds, e.g. 'str(args.file->f_path.dentry->d_name.name) == \"secret\"'")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("name one kernel function to nullify")
	}
	if *ret == "" {
		return usageError("--return VALUE is required: what the function returns instead")
	}
	fn := pos[0]
	value, err := strconv.ParseInt(*ret, 0, 64)
	if err != nil {
		return usageError("--return %q is not an integer", *ret)
	}
	if !c.Unsafe && !c.Show {
		return fmt.Errorf("nullify changes what the kernel does: run it with --unsafe")
	}
	if value == 0 {
		return fmt.Errorf("nullify cannot return 0: to BPF a zero return value means \"run the function\"; return an error code such as -1 (EPERM) instead")
	}
	if !c.Show {
		if err := canNullify(fn, value); err != nil {
			return err
		}
	}
	src := nullifyProgram(&c, fn, value, *cond)
	clock, err := newWallClock()
	if err != nil {
		return err
	}
	hooks := runHooks{}
	if !c.Quiet {
		hooks.Printf = func(w io.Writer, _ string, args []kinst.Value) error {
			if c.Format == "json" {
				_, err := w.Write(nullifiedJSON(clock.Wall(args[0].Uint()), args[1].Int(), args[2].Int(), args[3].Text(), fn, value))
				return err
			}
			_, err := fmt.Fprintf(w, "%s pid %d tid %d %s: %s returned %d\n",
				clock.Wall(args[0].Uint()).Format("15:04:05.000000000"), args[1].Int(), args[2].Int(), args[3].Text(), fn, value)
			return err
		}
	}
	hooks.ExitMaps = func(w io.Writer, maps []*kinst.Map) error {
		if !c.Quiet {
			return nil
		}
		for _, m := range maps {
			if m.Name == "@nullified" && len(m.Entries) > 0 {
				n, _ := m.Entries[0].Value.(uint64)
				if c.Format == "json" {
					var jw jsonWriter
					jw.open('{')
					jw.key("function")
					jw.str(fn)
					jw.key("nullified")
					jw.uint(n)
					jw.close('}')
					_, err := w.Write(append(jw.b, '\n'))
					return err
				}
				_, err := fmt.Fprintf(w, "%s: %d calls nullified\n", fn, n)
				return err
			}
		}
		return nil
	}
	return c.run(ctx, "nullify", src, hooks, stdout, stderr)
}

// nullifyProgram is the kinst program nullify runs: an fmod_ret
// program whose nonzero return value replaces the function's body.
func nullifyProgram(c *common, fn string, value int64, cond string) string {
	var b strings.Builder
	who := c.predicate()
	if c.Command != "" {
		who = commandFamily(&b, c)
	}
	fmt.Fprintf(&b, "fmod_ret:%s%s {\n\toverride(%d);\n", fn, predClause(and(who, cond)), value)
	if c.Quiet {
		b.WriteString("\t@nullified = count();\n")
	} else {
		b.WriteString("\tprintf(\"%lu %d %d %s\\n\", nsecs, pid, tid, comm);\n")
	}
	b.WriteString("}\n")
	b.WriteString(c.stop())
	return b.String()
}

// commandFamily writes the probes that follow the -c command and its
// descendants, thread by thread, and returns the condition that holds
// in one of them outside an exec. The exec of the command itself, and of
// each program it runs, calls the very hooks nullify replaces (opening
// the program's file is security_file_open): failing those would fail
// the exec, not the work the user wants to change.
func commandFamily(b *strings.Builder, c *common) string {
	only := *c
	only.Command = ""
	member := and("(pid == cpid || @__family[tid])", only.predicate())
	b.WriteString("tracepoint:sched:sched_process_fork /pid == cpid || @__family[tid]/ {\n\t@__family[args.child_pid] = 1;\n}\n")
	b.WriteString("tracepoint:sched:sched_process_exit /@__family[tid]/ {\n\tdelete(@__family[tid]);\n}\n")
	b.WriteString("tracepoint:syscalls:sys_enter_execve, tracepoint:syscalls:sys_enter_execveat /pid == cpid || @__family[tid]/ {\n\t@__exec[tid] = 1;\n}\n")
	b.WriteString("tracepoint:syscalls:sys_exit_execve, tracepoint:syscalls:sys_exit_execveat /@__exec[tid]/ {\n\tdelete(@__exec[tid]);\n}\n")
	return and(member, "!@__exec[tid]")
}

// canNullify checks that BPF may replace fn's return value on this
// kernel, and that value fits its return type.
func canNullify(fn string, value int64) error {
	if st := kernel.Probe(kernel.FeatFmodRet); !st.Available {
		return fmt.Errorf("cannot nullify %s: %s", fn, st.Reason)
	}
	proto, err := kernel.FuncProto(fn)
	if err != nil {
		return fmt.Errorf("cannot nullify %s: the kernel has no type information for it: %w", fn, err)
	}
	if !strings.HasPrefix(fn, "security_") && !errorInjectable(fn) {
		return fmt.Errorf("cannot nullify %s: BPF may replace the return value only of security_* hooks and of functions marked for error injection, and %s is neither", fn, fn)
	}
	rt, err := check.FromBTF(proto.Return, check.KernelSpace)
	if err != nil || rt.Kind != check.Int {
		return fmt.Errorf("cannot nullify %s: it does not return an integer", fn)
	}
	lo, hi := intRange(rt)
	if value < lo || value > hi {
		return fmt.Errorf("--return %d does not fit %s's return type %s (%d to %d)", value, fn, kernel.TypeString(proto.Return), lo, hi)
	}
	return nil
}

// intRange is the range of values an integer type holds, clamped to
// int64.
func intRange(t *check.Type) (lo, hi int64) {
	bits := uint(t.Size * 8)
	if t.Signed {
		return -1 << (bits - 1), 1<<(bits-1) - 1
	}
	if bits >= 64 {
		return 0, math.MaxInt64
	}
	return 0, 1<<bits - 1
}

// errorInjectable reports whether the kernel lists fn as open to error
// injection.
func errorInjectable(fn string) bool {
	f, err := os.Open(errorInjectionList)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, _, _ := strings.Cut(sc.Text(), "\t"); strings.TrimSpace(name) == fn {
			return true
		}
	}
	return false
}

// nullifiedJSON is one nullified call as a JSON line.
func nullifiedJSON(wall time.Time, pid, tid int64, comm, fn string, ret int64) []byte {
	var w jsonWriter
	w.open('{')
	w.key("time")
	w.str(wall.Format(jsonTime))
	w.key("pid")
	w.int(pid)
	w.key("tid")
	w.int(tid)
	w.key("comm")
	w.str(comm)
	w.key("function")
	w.str(fn)
	w.key("return")
	w.int(ret)
	w.close('}')
	return append(w.b, '\n')
}
