package check

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"

	"kinst.dev/kinst/cconst"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/internal/spell"
	"kinst.dev/kinst/syntax"
)

// Provider groups for builtins that only some probes have.
var (
	argProviders  = []string{"kprobe", "uprobe", "usdt", "rawtracepoint", "fentry", "fexit", "fmod_ret"}
	retProviders  = []string{"kretprobe", "uretprobe", "fexit", "fmod_ret"}
	funcProviders = []string{"kprobe", "kretprobe", "uprobe", "uretprobe", "fentry", "fexit", "fmod_ret"}
	argsProviders = []string{"tracepoint", "rawtracepoint", "fentry", "fexit", "fmod_ret", "kprobe", "kretprobe", "uprobe"}
)

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// MaxArgs is how many arguments arg0..argN reach: the registers x86-64
// passes them in.
const MaxArgs = 6

// builtin types an identifier that names a builtin variable.
func (c *checker) builtin(id *syntax.Ident) *Type {
	p := c.probe
	name := id.Name
	if inner, ok := strings.CutPrefix(name, "__builtin_"); ok && has(wrappedBuiltins, inner) {
		return c.wrapped(id, inner)
	}
	p.Uses[name] = true
	switch name {
	case "pid", "tid", "uid", "gid", "nsecs", "elapsed", "cpu", "cgroup", "rand", "numaid":
		return TUint64
	case "comm":
		return StrType(16)
	case "ppid", "pcomm", "leader_tid", "leader_comm":
		return c.taskField(id, nil, name)
	case "ncpus":
		delete(p.Uses, name)
		c.setConst(id, Const{Int: uint64(possibleCPUs())})
		return TUint64
	case "jiffies":
		return TUint64
	case "username":
		return TUser
	case "usermode":
		delete(p.Uses, name)
		switch p.Provider {
		case "kprobe", "kretprobe", "uprobe", "uretprobe", "usdt", "profile", "interval", "software", "hardware", "watchpoint", "asyncwatchpoint":
			// Read from the interrupted registers' code segment.
			p.Uses[name] = true
		case "BEGIN", "END", "self", "test", "bench":
			// bpftrace runs these in its own process.
			c.setConst(id, Const{Int: 1})
		default:
			// The probe has no registers to tell by.
			c.setConst(id, Const{Int: 0})
		}
		return TUint8
	case "probetype":
		delete(p.Uses, name)
		c.setConst(id, Const{IsStr: true, Str: probeType(p.Provider)})
		return StrType(len(probeType(p.Provider)) + 1)
	case "probe":
		return TProbe
	case "cpid":
		if !c.conf.Cpid {
			c.errorf(id, "cpid needs a command to run: use -c CMD")
			return nil
		}
		return TUint64
	case "curtask":
		// The program's own struct task_struct hides the kernel's.
		if c.decls.broken["struct task_struct"] {
			return nil // reported with the declaration
		}
		if t := c.decls.tags["struct task_struct"]; t != nil {
			return &Type{Kind: Ptr, Size: 8, Elem: t, Space: KernelSpace}
		}
		if c.conf.Kernel != nil {
			if t, err := c.conf.Kernel.Type(syntax.STRUCT, "task_struct"); err == nil {
				return &Type{Kind: Ptr, Size: 8, Elem: t, Space: KernelSpace}
			}
		}
		return TUint64
	case "kstack", "ustack":
		t := &Type{Kind: Stack, Size: 8, User: name == "ustack", Frames: defaultFrames, StackMode: c.stackMode()}
		if t.StackMode == "build_id" && !t.User {
			c.warnf(id, "'build_id' stack mode can only be used for ustack. Falling back to 'raw' mode.")
			t.StackMode = "raw"
		}
		return t
	case "func":
		if !has(funcProviders, p.Provider) {
			c.errorf(id, "func is only available in %s probes", strings.Join(funcProviders, ", "))
			return nil
		}
		return TFunc
	case "retval":
		if !has(retProviders, p.Provider) {
			c.errorf(id, "retval is only available in %s probes", strings.Join(retProviders, ", "))
			return nil
		}
		if p.Ret != nil {
			return p.Ret
		}
		return TUint64
	case "args":
		if !has(argsProviders, p.Provider) {
			c.errorf(id, "args is only available in %s probes", strings.Join(argsProviders, ", "))
			return nil
		}
		if p.Args == nil {
			if err := p.Targets[0].argsErr; err != nil {
				c.errorf(id, "args is not available for %s: %v", p.Targets[0].FullName(), err)
			} else {
				c.errorf(id, "args is not available for %s: the kernel has no type information for it", p.Targets[0].FullName())
			}
			return nil
		}
		return p.Args
	case "ctx":
		if runByKinst(p.Provider) {
			c.errorf(id, "ctx has no meaning in %s", p.Provider)
			return nil
		}
		if p.Provider == "iter" && len(p.Targets) > 0 {
			// An iterator's context is its record of meta data and
			// object pointers: ctx->task, ctx->file.
			return &Type{Kind: Ptr, Size: 8, Elem: p.Targets[0].Args, Space: KernelSpace}
		}
		return &Type{Kind: Ptr, Size: 8, Space: KernelSpace}
	}
	if n, ok := argIndex(name); ok {
		if !has(argProviders, p.Provider) {
			c.errorf(id, "%s is only available in %s probes", name, strings.Join(argProviders, ", "))
			return nil
		}
		if p.Provider == "usdt" {
			return c.usdtArg(id, n)
		}
		limit := MaxArgs
		if t := p.Targets[0]; t.NumArgs > 0 && (p.Provider != "kprobe" && p.Provider != "uprobe") {
			limit = t.NumArgs
		}
		if p.Provider == "rawtracepoint" {
			limit = 12
		}
		if n >= limit {
			c.errorf(id, "%s is out of range: %s probes have arguments arg0 to arg%d", name, p.Provider, limit-1)
			return nil
		}
		return TUint64
	}
	if _, ok := stackArgIndex(name); ok {
		if p.Provider != "kprobe" && p.Provider != "uprobe" {
			c.errorf(id, "%s is only available in kprobe and uprobe probes: it reads the stack at the function's entry", name)
			return nil
		}
		if c.conf.Compat != compat.V017 {
			c.warnf(id, "%s was removed in bpftrace 0.25, which refuses it and reads the stack with *(reg(\"sp\") + OFFSET); kinst still reads it", name)
		}
		return TInt64
	}
	if name == "true" || name == "false" {
		delete(p.Uses, name)
		c.setConst(id, Const{Int: b2u(name == "true")})
		return c.boolType()
	}
	if v, ok := c.constant(name); ok {
		delete(p.Uses, name)
		c.setConst(id, Const{Int: uint64(v)})
		if t := c.decls.enumTypes[name]; t != nil && c.conf.Compat != compat.V017 {
			// Of the enum the program declares, so that it prints as
			// its name in bpftrace 0.26.
			return t
		}
		return TInt64
	}
	if c.decls.broken[name] {
		return nil // an enum constant whose declaration failed
	}
	if near := spell.Nearest(name, builtinNames); near != "" {
		c.errorf(id, "unknown identifier %s (did you mean %s?)", name, near)
	} else {
		c.errorf(id, "unknown identifier %s", name)
	}
	return nil
}

// wrappedBuiltins are the builtins bpftrace 0.26.1 names __builtin_NAME
// too, the names its standard library defines NAME by.
var wrappedBuiltins = []string{
	"cgroup", "comm", "cpid", "cpu", "curtask", "elapsed", "func", "gid", "jiffies", "ncpus",
	"probe", "probetype", "rand", "retval", "uid", "usermode", "username",
}

// wrapped types __builtin_NAME as the builtin NAME it stands for.
func (c *checker) wrapped(id *syntax.Ident, name string) *Type {
	inner := &syntax.Ident{NamePos: id.NamePos, Name: name}
	t := c.expr(inner)
	if t == nil {
		return nil
	}
	if v, ok := c.probe.Consts[inner]; ok {
		c.setConst(id, v)
	}
	c.probe.Expand[id] = inner
	return t
}

// probeType is the kind of probe that probetype names for a provider,
// as bpftrace 0.26.1 names it.
func probeType(provider string) string {
	switch provider {
	case "BEGIN", "END", "self":
		return "special"
	case "bench":
		return "benchmark"
	case "asyncwatchpoint":
		return "watchpoint"
	}
	return provider
}

// usdtArg types argument n of a USDT probe: every site the probe covers
// must pass it. Like bpftrace, it is a 64-bit integer, extended from the
// operand's width as its sign says.
func (c *checker) usdtArg(id *syntax.Ident, n int) *Type {
	for _, t := range c.probe.Targets {
		if n < len(t.USDT) {
			continue
		}
		switch len(t.USDT) {
		case 0:
			c.errorf(id, "%s is out of range: %s has no arguments", id.Name, t.FullName())
		case 1:
			c.errorf(id, "%s is out of range: %s has one argument, arg0", id.Name, t.FullName())
		default:
			c.errorf(id, "%s is out of range: %s has arguments arg0 to arg%d", id.Name, t.FullName(), len(t.USDT)-1)
		}
		return nil
	}
	return TUint64
}

// constant resolves a name no macro replaced: an enumerator the program
// or the kernel declares, else a constant of the C headers kinst knows
// without them.
func (c *checker) constant(name string) (int64, bool) {
	if v, ok := c.enumValue(name); ok {
		return v, true
	}
	return cconst.Lookup(name)
}

var builtinNames = []string{
	"pid", "tid", "uid", "gid", "nsecs", "elapsed", "cpu", "cgroup", "rand", "numaid",
	"ppid", "pcomm", "leader_tid", "leader_comm", "ncpus", "jiffies",
	"comm", "username", "usermode", "probe", "probetype", "cpid", "curtask", "kstack", "ustack", "func",
	"retval", "args", "ctx", "arg0", "arg1", "sarg0", "sarg1",
}

// argIndex parses "argN".
func argIndex(name string) (int, bool) { return numbered(name, "arg") }

// stackArgIndex parses "sargN", the Nth argument passed on the stack.
func stackArgIndex(name string) (int, bool) { return numbered(name, "sarg") }

// StackArgIndex parses "sargN" for the code generator.
func StackArgIndex(name string) (int, bool) { return stackArgIndex(name) }

// numbered parses prefix followed by a number without leading zeros.
func numbered(name, prefix string) (int, bool) {
	if !strings.HasPrefix(name, prefix) || len(name) == len(prefix) {
		return 0, false
	}
	n, err := strconv.Atoi(name[len(prefix):])
	if err != nil || n < 0 || fmt.Sprint(n) != name[len(prefix):] {
		return 0, false
	}
	return n, true
}

// defaultFrames is how many frames kstack and ustack keep, as bpftrace.
const defaultFrames = 127

// taskFields are the builtins that read a task_struct: the path from the
// task to what they give.
var taskFields = map[string][2]string{
	"ppid":        {"real_parent", "pid"},
	"pcomm":       {"real_parent", "comm"},
	"leader_tid":  {"group_leader", "pid"},
	"leader_comm": {"group_leader", "comm"},
}

// taskField types ppid, pcomm, leader_tid and leader_comm of task (the
// current task when nil) as the field access they stand for, which
// needs the kernel's BTF.
func (c *checker) taskField(n syntax.Expr, task syntax.Expr, name string) *Type {
	if task == nil {
		task = &syntax.Ident{NamePos: n.Pos(), Name: "curtask"}
	}
	tt := c.expr(task)
	if tt == nil {
		return nil
	}
	if tt.Kind != Ptr || tt.Elem == nil || tt.Elem.Name != "struct task_struct" {
		if tt.Kind == Int && c.conf.Kernel == nil {
			c.errorf(n, "%s reads struct task_struct, which needs the kernel's BTF", name)
		} else {
			c.errorf(n, "%s takes a struct task_struct *, not %s", name, tt)
		}
		return nil
	}
	path := taskFields[name]
	e := &syntax.FieldExpr{X: &syntax.FieldExpr{X: task, Arrow: true, Name: path[0], NamePos: n.Pos()}, Arrow: true, Name: path[1], NamePos: n.Pos()}
	t := c.expr(e)
	if t == nil {
		return nil
	}
	c.probe.Expand[n] = e
	return t
}

// possibleCPUs counts the CPUs the kernel may bring up, as ncpus does.
func possibleCPUs() int {
	if n, err := ebpf.PossibleCPU(); err == nil {
		return n
	}
	return runtime.NumCPU()
}
