package codegen

import (
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/compat"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// argRegs are the pt_regs offsets of the x86-64 argument registers:
// di, si, dx, cx, r8, r9.
var argRegs = [check.MaxArgs]int16{112, 104, 96, 88, 72, 64}

// raxOffset is where pt_regs keeps the return value.
const raxOffset = 80

// csOffset is where pt_regs keeps the code segment, whose low two bits
// are the privilege level the probe interrupted: 3 in user mode.
const csOffset = 136

// Flags of bpf_get_stackid.
const stackUser = 1 << 8 // BPF_F_USER_STACK

// BuildIDFrameSize is the size of a frame in BuildIDStackMap, the
// kernel's struct bpf_stack_build_id: a status (s32), the 20 bytes of
// the build ID, and the file offset, or the address when the status
// says the build ID could not be read.
const BuildIDFrameSize = 32

// helperResult calls fn and returns its result as a temporary, after
// applying the instructions in post to R0.
func (g *gen) helperResult(fn asm.BuiltinFunc, post ...asm.Instruction) operand {
	g.call(fn)
	g.emit(post...)
	return g.fromReg(asm.R0)
}

// A builtinVar generates a builtin variable, in the forms its type
// calls for: as a value in a register, as a value in memory, or as a
// place its fields are read from.
type builtinVar struct {
	scalar func(g *gen, id *syntax.Ident) operand
	mem    func(g *gen, id *syntax.Ident, dst mem)
	place  func(g *gen, id *syntax.Ident) loc
}

// builtinVars says how each of the checker's builtin variables is
// generated. Those the checker answers itself, with a constant or with
// another expression, are absent, as are the numbered argN and sargN,
// which builtin parses; TestBuiltinsCovered holds the table to
// check.Variables.
var builtinVars = map[string]builtinVar{
	"pid":      {scalar: func(g *gen, id *syntax.Ident) operand { return g.pidTid("pid", "") }},
	"tid":      {scalar: func(g *gen, id *syntax.Ident) operand { return g.pidTid("tid", "") }},
	"uid":      {scalar: helperVar(asm.FnGetCurrentUidGid, asm.Mov.Reg32(asm.R0, asm.R0))},
	"username": {scalar: helperVar(asm.FnGetCurrentUidGid, asm.Mov.Reg32(asm.R0, asm.R0))},
	"gid":      {scalar: helperVar(asm.FnGetCurrentUidGid, asm.RSh.Imm(asm.R0, 32))},
	"nsecs":    {scalar: func(g *gen, id *syntax.Ident) operand { return g.nsecs("") }},
	"jiffies":  {scalar: helperVar(asm.FnJiffies64)},
	"cpu":      {scalar: helperVar(asm.FnGetSmpProcessorId)},
	"cgroup":   {scalar: helperVar(asm.FnGetCurrentCgroupId)},
	"rand":     {scalar: helperVar(asm.FnGetPrandomU32)},
	"numaid":   {scalar: helperVar(asm.FnGetNumaNodeId)},
	"curtask":  {scalar: helperVar(asm.FnGetCurrentTask)},
	"elapsed":  {scalar: (*gen).elapsed},
	"cpid":     {scalar: func(g *gen, id *syntax.Ident) operand { return g.constValue(ConstCpid) }},
	"probe":    {scalar: func(g *gen, id *syntax.Ident) operand { return g.targetIndex() }, mem: (*gen).probeName},
	"func":     {scalar: func(g *gen, id *syntax.Ident) operand { return g.targetIndex() }},
	"kstack":   {scalar: func(g *gen, id *syntax.Ident) operand { return g.stackID(g.typeOf(id)) }},
	"ustack":   {scalar: func(g *gen, id *syntax.Ident) operand { return g.stackID(g.typeOf(id)) }},
	"retval":   {scalar: func(g *gen, id *syntax.Ident) operand { return g.retval() }},
	"ctx":      {scalar: func(g *gen, id *syntax.Ident) operand { return g.fromReg(regCtx) }},
	"usermode": {scalar: (*gen).usermode},
	"comm":     {mem: (*gen).comm},
	// Its fields are in the context.
	"args": {place: func(g *gen, id *syntax.Ident) loc { return loc{kind: locCtx} }},
}

// helperVar generates a variable as the result of helper fn, after the
// instructions in post.
func helperVar(fn asm.BuiltinFunc, post ...asm.Instruction) func(g *gen, id *syntax.Ident) operand {
	return func(g *gen, id *syntax.Ident) operand { return g.helperResult(fn, post...) }
}

// builtin generates a builtin variable.
func (g *gen) builtin(id *syntax.Ident) operand {
	if f := builtinVars[id.Name].scalar; f != nil {
		return f(g, id)
	}
	if n, ok := argIndex(id.Name); ok {
		return g.arg(n)
	}
	if n, ok := check.StackArgIndex(id.Name); ok {
		return g.stackArg(n)
	}
	g.c.errorf(id, "builtin %s is not supported here", id.Name)
	return immOp(0)
}

// elapsed is the time since kinst started the program.
func (g *gen) elapsed(id *syntax.Ident) operand {
	now := g.helperResult(asm.FnKtimeGetNs)
	start := g.constValue(ConstStartTime)
	r := g.work(now, asm.R1)
	g.emit(asm.Sub.Reg(r, g.reg(start, asm.R2)))
	g.set(now, r)
	g.free(start)
	return now
}

// usermode is whether the probe interrupted user code.
func (g *gen) usermode(id *syntax.Ident) operand {
	op := g.ctxWord(csOffset)
	r := g.work(op, asm.R0)
	// (cs & 3) == 3, without a jump: (cs & 3) + 1 is 4 only then.
	g.emit(asm.And.Imm(r, 3), asm.Add.Imm(r, 1), asm.RSh.Imm(r, 2))
	g.set(op, r)
	return op
}

// comm reads the task's name into dst. Older kernels (6.1) copy the name
// without padding it, and equal names must be equal keys.
func (g *gen) comm(id *syntax.Ident, dst mem) {
	n := min(16, dst.size)
	g.zero(dst.at(0, n))
	g.addr(asm.R1, dst)
	g.emit(asm.Mov.Imm(asm.R2, int32(n)))
	g.call(asm.FnGetCurrentComm)
	if dst.size > n {
		g.zero(dst.at(n, dst.size-n))
	}
}

// commOf reads into dst the name of the task whose pid is comm(pid)'s
// argument, as bpftrace 0.26.1's standard library does: the kfunc
// bpf_task_from_pid finds the task and holds it while its comm is read,
// bpf_task_release lets it go. A pid no task has gives "N/A" and the
// warning the checker prepared.
func (g *gen) commOf(x *syntax.CallExpr, c *check.Call, dst mem) {
	from, ok1 := kernel.FuncID("bpf_task_from_pid")
	release, ok2 := kernel.FuncID("bpf_task_release")
	if !ok1 || !ok2 {
		g.c.errorf(x, "comm(pid) calls the kernel's bpf_task_from_pid and bpf_task_release, which its BTF does not describe")
		return
	}
	pid := g.scalar(x.Args[0])
	g.load(asm.R1, pid)
	g.free(pid)
	g.zero(dst)
	g.emit(kernel.KfuncCall(from))
	task := g.fromReg(asm.R0)
	found, done := g.newLabel("task"), g.newLabel("comm")
	g.emit(asm.JNE.Imm(g.reg(task, asm.R0), 0, found))
	g.storeRaw(dst, []byte("N/A"))
	for _, s := range c.Then {
		g.callStmt(s)
	}
	g.emit(asm.Ja.Label(done))
	g.place(found)
	n := min(16, dst.size)
	g.addr(asm.R1, dst)
	g.emit(asm.Mov.Imm(asm.R2, int32(n)))
	g.load(asm.R3, task)
	g.emit(asm.Add.Imm(asm.R3, int32(c.Offset)))
	g.call(asm.FnProbeReadKernel)
	g.load(asm.R1, task)
	g.emit(kernel.KfuncCall(release))
	g.place(done)
	g.free(task)
}

// uaddr gives uaddr()'s symbol in a position-independent program or a
// library as the process sees it, as bpftrace 0.26.1's standard library
// does: the symbol's address in the file, moved by the start of the
// lowest mapping of the file's inode, found by walking the current
// task's mappings with the open-coded iterator kfuncs. Where no mapping
// has the inode the address stays unmoved. The checker folds uaddr() to
// a constant everywhere else.
func (g *gen) uaddr(x *syntax.CallExpr, c *check.Call) operand {
	vi, err := kernel.TaskVMAIter()
	if err != nil {
		g.c.errorf(x, "uaddr(): %v", err)
		return immOp(0)
	}
	mark := g.mark()
	defer g.release(mark)
	it := g.allocStack(vi.Size)
	next, done := g.newLabel("vma"), g.newLabel("vmadone")
	g.call(asm.FnGetCurrentTaskBtf)
	g.emit(asm.Mov.Reg(asm.R2, asm.R0), asm.Mov.Imm(asm.R3, 0))
	g.addr(asm.R1, it)
	g.emit(kernel.KfuncCall(vi.New))
	// The iterator must be destroyed even when it failed to start; its
	// first next then finds nothing.
	g.place(next)
	g.addr(asm.R1, it)
	g.emit(kernel.KfuncCall(vi.Next),
		asm.JEq.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.R0, int16(vi.VMFile), asm.DWord),
		asm.JEq.Imm(asm.R1, 0, next),
		asm.LoadMem(asm.R1, asm.R1, int16(vi.FInode), asm.DWord),
		asm.LoadMem(asm.R1, asm.R1, int16(vi.IIno), asm.DWord),
	)
	g.movImm(asm.R2, int64(c.Inode))
	g.emit(asm.JNE.Reg(asm.R1, asm.R2, next),
		asm.LoadMem(asm.R0, asm.R0, int16(vi.VMStart), asm.DWord))
	g.place(done)
	start := g.fromReg(asm.R0)
	g.addr(asm.R1, it)
	g.emit(kernel.KfuncCall(vi.Destroy))
	r := g.work(start, asm.R0)
	g.movImm(asm.R1, int64(c.Offset))
	g.emit(asm.Add.Reg(r, asm.R1))
	g.set(start, r)
	return start
}

func argIndex(name string) (int, bool) {
	if len(name) < 4 || name[:3] != "arg" {
		return 0, false
	}
	n := 0
	for _, c := range name[3:] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// constValue reads a word user space stored in the consts map.
func (g *gen) constValue(off int) operand {
	key := g.allocStack(4)
	g.storeImm(asm.R10, key.off, 0, asm.Word)
	g.mapPtr(asm.R1, ConstsMap)
	g.addr(asm.R2, key)
	g.call(asm.FnMapLookupElem)
	done := g.newLabel("const")
	g.emit(asm.JEq.Imm(asm.R0, 0, done), asm.LoadMem(asm.R0, asm.R0, int16(off), asm.DWord))
	g.place(done)
	return g.fromReg(asm.R0)
}

// probeName writes the name of the attach point that fired into dst,
// for bpftrace 0.26's probe where a string is wanted: the name itself in
// a program of one target, else its slot in a table of the program's
// target names, indexed by what probe yields.
func (g *gen) probeName(id *syntax.Ident, dst mem) {
	if len(g.p.Targets) == 1 {
		g.storeBytes(dst, g.p.Targets[0].FullName())
		return
	}
	low, high := slices.Min(g.ids), slices.Max(g.ids)
	slot := 1
	for _, t := range g.p.Targets {
		slot = max(slot, len(t.FullName())+1)
	}
	if g.names == nil {
		table := make([]byte, int(high-low+1)*slot)
		for i, t := range g.p.Targets {
			copy(table[int(g.ids[i]-low)*slot:], t.FullName())
		}
		g.names = &ebpf.MapSpec{
			Name:       mapName("", g.namesName),
			Type:       ebpf.Array,
			KeySize:    4,
			ValueSize:  uint32(len(table)),
			MaxEntries: 1,
			Contents:   []ebpf.MapKV{{Key: uint32(0), Value: table}},
		}
	}
	index := g.targetIndex()
	g.load(asm.R1, index)
	g.free(index)
	missing, done := g.newLabel("noname"), g.newLabel("name")
	g.emit(asm.Sub.Imm(asm.R1, int32(low)), asm.JGE.Imm(asm.R1, int32(high-low+1), missing))
	g.emit(asm.Mul.Imm(asm.R1, int32(slot)))
	g.emit(asm.LoadMapValue(asm.R4, 0, 0).WithReference(g.namesName), asm.Add.Reg(asm.R4, asm.R1))
	g.copyMem(dst, mem{base: asm.R4, size: slot})
	g.emit(asm.Ja.Label(done))
	g.place(missing)
	g.zero(dst)
	g.place(done)
}

// targetIndex is the index in Output.Targets of the target that fired:
// a constant for a program of one target, what a raw_syscalls program
// found in its table, the attach cookie for several others.
func (g *gen) targetIndex() operand {
	if len(g.p.Targets) == 1 {
		return immOp(int64(g.ids[0]))
	}
	if g.mech == MechSyscalls {
		g.emit(asm.LoadMem(asm.R0, asm.R10, g.idSlot, asm.DWord))
		return g.fromReg(asm.R0)
	}
	g.cookies = true
	g.emit(asm.Mov.Reg(asm.R1, regCtx))
	if g.cookieShift != 0 {
		return g.helperResult(asm.FnGetAttachCookie, asm.Add.Imm(asm.R0, int32(g.cookieShift)))
	}
	return g.helperResult(asm.FnGetAttachCookie)
}

// stackID records the current kernel or user stack in a stack-trace map
// and returns its id: the low 32 bits are the stack id (negative on
// failure); ustack puts the pid in the high 32 bits for symbolization.
func (g *gen) stackID(t *check.Type) operand {
	name, flags := KstackMap, int32(0)
	switch {
	case t.StackMode == "build_id":
		name, flags = BuildIDStackMap, stackUser
		g.c.buildIDDepth = max(g.c.buildIDDepth, t.Frames)
	case t.User:
		name, flags = UstackMap, stackUser
		g.c.ustackDepth = max(g.c.ustackDepth, t.Frames)
	default:
		g.c.kstackDepth = max(g.c.kstackDepth, t.Frames)
	}
	g.emit(asm.Mov.Reg(asm.R1, regCtx))
	g.mapPtr(asm.R2, name)
	g.emit(asm.Mov.Imm(asm.R3, flags))
	g.call(asm.FnGetStackid)
	// A stack whose hash bucket holds another stack (EEXIST), or that
	// finds the map full (ENOMEM), is dropped and prints empty: counted,
	// for the warning at exit. EFAULT, a user stack where there is none,
	// is no loss.
	counted := g.newLabel("stacked")
	lost := g.newLabel("stacklost")
	g.emit(
		asm.JEq.Imm(asm.R0, -int32(unix.EEXIST), lost),
		asm.JNE.Imm(asm.R0, -int32(unix.ENOMEM), counted),
	)
	g.place(lost)
	g.emit(
		asm.LoadMapValue(asm.R1, 0, LostStacks).WithReference(LostMap),
		asm.Mov.Imm(asm.R2, 1),
		asm.StoreXAdd(asm.R1, asm.R2, asm.DWord),
	)
	g.place(counted)
	g.emit(asm.Mov.Reg32(asm.R0, asm.R0))
	id := g.fromReg(asm.R0)
	if !t.User {
		return id
	}
	g.call(asm.FnGetCurrentPidTgid)
	g.emit(asm.RSh.Imm(asm.R0, 32), asm.LSh.Imm(asm.R0, 32))
	r := g.work(id, asm.R1)
	g.emit(asm.Or.Reg(r, asm.R0))
	g.set(id, r)
	return id
}

// stackLen counts the frames of the stack of type t, which
// bpf_get_stack copies into scratch memory: the bytes it wrote over 8.
func (g *gen) stackLen(t *check.Type) operand {
	mark := g.mark()
	defer g.release(mark)
	flags := int32(0)
	if t.User {
		flags = stackUser
	}
	buf := g.allocScratch(t.Frames*8, 8)
	g.emit(asm.Mov.Reg(asm.R1, regCtx))
	g.addr(asm.R2, buf)
	g.emit(asm.Mov.Imm(asm.R3, int32(buf.size)), asm.Mov.Imm(asm.R4, flags))
	g.call(asm.FnGetStack)
	// An error (negative) counts no frames.
	done := g.newLabel("stacklen")
	g.emit(asm.Mov.Imm(asm.R1, 0), asm.JSLT.Imm(asm.R0, 0, done), asm.Mov.Reg(asm.R1, asm.R0), asm.RSh.Imm(asm.R1, 3))
	g.place(done)
	return g.fromReg(asm.R1)
}

// ctxWord loads the 64-bit word at off in the context.
func (g *gen) ctxWord(off int16) operand {
	t := g.newTemp()
	r := g.work(t, asm.R0)
	g.emit(asm.LoadMem(r, regCtx, off, asm.DWord))
	g.set(t, r)
	return t
}

// arg reads argument n: from the saved registers in kprobes and uprobes,
// from the argument array in raw tracepoints and trampolines.
func (g *gen) arg(n int) operand {
	if g.p.Provider == "usdt" {
		return g.usdtArg(g.p.Targets[0].USDT[n])
	}
	if g.mech.regsContext() {
		return g.ctxWord(argRegs[n])
	}
	return g.ctxWord(int16(8 * n))
}

// retval reads the return value: a trampoline finds it after the
// arguments, a return probe in the saved rax.
func (g *gen) retval() operand {
	if g.mech.IsTrampoline() && !g.p.Targets[0].Typed {
		// A function of a BPF program: the kernel takes a function's
		// BTF for its arguments only when the verifier found it fits
		// the code, else five words, so the trampoline is asked.
		slot := g.allocStack(8)
		g.emit(asm.Mov.Reg(asm.R1, regCtx))
		g.addr(asm.R2, slot)
		g.call(asm.FnGetFuncRet)
		op := g.newTemp()
		r := g.work(op, asm.R0)
		g.emit(asm.LoadMem(r, slot.base, slot.off, asm.DWord))
		g.set(op, r)
		return op
	}
	if g.mech.IsTrampoline() {
		op := g.ctxWord(int16(8 * g.p.Targets[0].NumArgs))
		if t := g.p.Ret; t != nil {
			r := g.work(op, asm.R0)
			g.normalize(r, t)
			g.set(op, r)
		}
		return op
	}
	op := g.ctxWord(raxOffset)
	if t := g.p.Ret; t != nil {
		r := g.work(op, asm.R0)
		g.normalize(r, t)
		g.set(op, r)
	}
	return op
}

// spOffset is where pt_regs keeps the stack pointer.
const spOffset = 152

// stackArg reads the nth argument passed on the stack: at a function's
// entry the return address is at sp, the stack arguments above it.
func (g *gen) stackArg(n int) operand {
	sp := g.owned(g.ctxWord(spOffset))
	slot := g.allocStack(8)
	g.storeImm(asm.R10, slot.off, 0, asm.DWord)
	r := g.work(sp, asm.R3)
	g.emit(asm.Add.Imm(r, int32(8*(n+1))))
	g.set(sp, r)
	g.load(asm.R3, sp)
	g.free(sp)
	g.addr(asm.R1, slot)
	g.emit(asm.Mov.Imm(asm.R2, 8))
	space := check.KernelSpace
	if g.p.Provider == "uprobe" {
		space = check.UserSpace
	}
	g.call(readHelper(space))
	g.emit(asm.LoadMem(asm.R0, asm.R10, slot.off, asm.DWord))
	return g.fromReg(asm.R0)
}

// initPidNs is the inode of the initial PID namespace (PROC_PID_INIT_INO).
const initPidNs = 0xeffffffc

// pidTid generates pid or tid as seen from PID namespace ns: "init" for
// the initial one, "curr_ns" for kinst's, "" for the mode's default
// (kinst's in bpftrace 0.26, the initial one in 0.17). In kinst's
// namespace, when that is not the initial one, it takes
// bpf_get_ns_current_pid_tgid.
func (g *gen) pidTid(name, ns string) operand {
	if ns == "" && g.c.prog.Compat != compat.V017 {
		ns = "curr_ns"
	}
	var st unix.Stat_t
	if ns != "curr_ns" || unix.Stat("/proc/self/ns/pid", &st) != nil || st.Ino == initPidNs {
		if name == "pid" {
			return g.helperResult(asm.FnGetCurrentPidTgid, asm.RSh.Imm(asm.R0, 32))
		}
		return g.helperResult(asm.FnGetCurrentPidTgid, asm.Mov.Reg32(asm.R0, asm.R0))
	}
	// struct bpf_pidns_info { u32 pid; u32 tgid; }
	info := g.alloc(8, 8)
	g.storeImm(info.base, info.off, 0, asm.DWord)
	g.movImm(asm.R1, int64(st.Dev))
	g.movImm(asm.R2, int64(st.Ino))
	g.addr(asm.R3, info)
	g.emit(asm.Mov.Imm(asm.R4, 8))
	g.call(asm.FnGetNsCurrentPidTgid)
	off := info.off
	if name == "pid" {
		off += 4
	}
	g.emit(asm.LoadMem(asm.R0, info.base, off, asm.Word))
	return g.fromReg(asm.R0)
}

// nsecs generates nsecs of clock mode: boot, monotonic, tai, or sw_tai
// (boot plus the difference of the TAI and boot clocks when compiled),
// "" for the mode's default (boot in bpftrace 0.26, monotonic in 0.17).
func (g *gen) nsecs(mode string) operand {
	if mode == "" {
		mode = "boot"
		if g.c.prog.Compat == compat.V017 {
			mode = "monotonic"
		}
	}
	switch mode {
	case "monotonic":
		return g.helperResult(asm.FnKtimeGetNs)
	case "tai":
		return g.helperResult(asm.FnKtimeGetTaiNs)
	case "sw_tai":
		var tai, boot unix.Timespec
		unix.ClockGettime(unix.CLOCK_TAI, &tai)
		unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot)
		t := g.helperResult(asm.FnKtimeGetBootNs)
		r := g.work(t, asm.R0)
		g.movImm(asm.R1, tai.Nano()-boot.Nano())
		g.emit(asm.Add.Reg(r, asm.R1))
		g.set(t, r)
		return t
	}
	return g.helperResult(asm.FnKtimeGetBootNs)
}
