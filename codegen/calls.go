package codegen

import (
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

// join() reads up to joinArgs arguments of joinLen bytes each, as
// bpftrace 0.17 does whatever the string size.
const (
	joinArgs = 16
	joinLen  = 64
)

// action registers an action and returns its id.
func (g *gen) action(a *Action) *Action {
	a.ID = len(g.c.out.Actions)
	a.Pos = g.cur
	a.Probe = g.p
	g.c.out.Actions = append(g.c.out.Actions, a)
	if g.loops > 0 || !firesOnce(g.p) {
		g.c.streams = true
	} else {
		// The ring buffer puts an 8-byte header before each record and
		// rounds it to 8 bytes.
		g.c.onceBytes += 8 + alignUp(a.RecordSize(), 8)
	}
	return a
}

// firesOnce reports whether p runs once per run of the program (a signal
// probe runs once per signal, at a person's pace).
func firesOnce(p *check.Probe) bool {
	switch p.Provider {
	case "BEGIN", "END", "test", "self":
		return true
	}
	return false
}

// emitRecord sends rec to user space through the ring buffer, counting
// it as lost when the buffer is full.
func (g *gen) emitRecord(rec mem) {
	g.mapPtr(asm.R1, EventsMap)
	g.addr(asm.R2, rec)
	g.emit(asm.Mov.Imm(asm.R3, int32(rec.size)), asm.Mov.Imm(asm.R4, 0))
	g.call(asm.FnRingbufOutput)
	// A full buffer counts the record as lost, with an atomic add to a
	// counter user space reads through a memory mapping.
	ok := g.newLabel("sent")
	g.emit(
		asm.JEq.Imm(asm.R0, 0, ok),
		asm.LoadMapValue(asm.R1, 0, 0).WithReference(LostMap),
		asm.Mov.Imm(asm.R2, 1),
		asm.StoreXAdd(asm.R1, asm.R2, asm.DWord),
	)
	g.place(ok)
}

// record allocates a record for action a and writes its header.
func (g *gen) record(a *Action) mem {
	rec := g.alloc(a.RecordSize(), 8)
	g.storeImm(rec.base, rec.off, int64(a.ID), asm.DWord)
	return rec
}

// sendArgs sends an action record carrying the values of args.
func (g *gen) sendArgs(kind ActionKind, c *check.Call, args []syntax.Expr) *Action {
	a := &Action{Kind: kind}
	if c != nil {
		a.Format = c.Format
	}
	if len(args) > 0 {
		types := make([]*check.Type, len(args))
		for i, x := range args {
			types[i] = g.typeOf(x)
		}
		a.Args = check.TupleType(types)
	}
	g.action(a)
	rec := g.record(a)
	if a.Args != nil {
		body := rec.at(headerSize, a.Args.Size)
		if hasPadding(a.Args) {
			g.zero(body)
		}
		for i, x := range args {
			et := a.Args.Elems[i]
			g.storeValue(x, body.at(a.Args.Offsets[i], et.Size), et)
		}
	}
	g.emitRecord(rec)
	return a
}

// coreArgs is the record of a core() call: the pid_tgid of the thread
// that made it.
var coreArgs = check.TupleType([]*check.Type{check.TUint64})

// A builtinFunc generates the calls of one builtin function, in the forms
// its type calls for: as a statement, for those without a value or with
// effects of their own there; as a value in a register; as a value in
// memory. A form it lacks falls back as callStmt, callScalar and callMem
// say.
type builtinFunc struct {
	stmt   func(g *gen, x *syntax.CallExpr, c *check.Call)
	scalar func(g *gen, x *syntax.CallExpr, c *check.Call) operand
	mem    func(g *gen, x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type)
	ends   bool // the probe ends at the call: no code after it runs
}

// builtinFuncs says how each of the checker's builtin functions is
// generated. Those the checker answers itself, with a constant or with
// another expression, are absent; TestBuiltinsCovered holds the table
// to check.Functions. It is filled in init, as assert generates calls
// through it.
var builtinFuncs map[string]builtinFunc

func init() {
	builtinFuncs = map[string]builtinFunc{
		"printf": {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) { g.sendArgs(ActPrintf, c, x.Args[1:]) }},
		"system": {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) { g.sendArgs(ActSystem, c, x.Args[1:]) }},
		"cat":    {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) { g.sendArgs(ActCat, c, x.Args[1:]) }},
		"errorf": {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) { g.report(ActErrorf, x, c) }},
		"warnf":  {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) { g.report(ActWarnf, x, c) }},
		"assert": {stmt: (*gen).assert},
		// They held when the program was compiled; nothing is left to do.
		"static_assert": {stmt: func(*gen, *syntax.CallExpr, *check.Call) {}},
		"assert_str":    {stmt: func(*gen, *syntax.CallExpr, *check.Call) {}},
		"print":         {stmt: (*gen).print},
		"clear":         {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) { g.mapOp(ActClear, c) }},
		"zero":          {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) { g.mapOp(ActZero, c) }},
		"exit":          {stmt: (*gen).exit, ends: true},
		"time": {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) {
			a := g.action(&Action{Kind: ActTime, Text: c.Text})
			g.emitRecord(g.record(a))
		}},
		"join": {stmt: (*gen).join},
		"delete": {
			stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) {
				for _, e := range c.Elems {
					g.deleteElem(e)
				}
			},
			scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.deleted(c.Elems) },
		},
		"signal":        {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) { g.signal(x, asm.FnSendSignal) }},
		"signal_thread": {stmt: func(g *gen, x *syntax.CallExpr, c *check.Call) { g.signal(x, asm.FnSendSignalThread) }},
		"core":          {stmt: (*gen).core},
		"unwatch":       {stmt: (*gen).unwatch},
		"override":      {stmt: (*gen).override},

		"ksym":         {scalar: firstArg},
		"kptr":         {scalar: firstArg},
		"uptr":         {scalar: firstArg},
		"strerror":     {scalar: firstArg},
		"cgroup_path":  {scalar: firstArg},
		"syscall_name": {scalar: firstArg},
		"signal_name":  {scalar: firstArg},
		"strftime":     {scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.scalar(x.Args[1]) }},
		"kstack":       {scalar: stackCall},
		"ustack":       {scalar: stackCall},
		"reg": {scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand {
			off, _ := check.RegisterOffset(c.Text)
			return g.ctxWord(int16(off))
		}},
		"strncmp":     {scalar: callOnly((*gen).strncmp)},
		"bswap":       {scalar: callOnly((*gen).bswap)},
		"strcontains": {scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.search(x, false) }},
		"strstr":      {scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.search(x, true) }},
		"strlen":      {scalar: callOnly((*gen).strlen)},
		"skboutput":   {scalar: (*gen).skboutput},
		"has_key":     {scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.hasKey(c.Elems[0]) }},
		"len": {scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand {
			if c.Map == nil {
				return g.stackLen(g.typeOf(x.Args[0]))
			}
			return g.mapLen(c.Map)
		}},
		"pid":           {scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.pidTid("pid", c.Text) }},
		"tid":           {scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.pidTid("tid", c.Text) }},
		"nsecs":         {scalar: func(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.nsecs(c.Text) }},
		"is_err":        {scalar: callOnly((*gen).isErr)},
		"memcmp":        {scalar: callOnly((*gen).memcmp)},
		"find":          {scalar: (*gen).find},
		"write_user":    {scalar: callOnly((*gen).writeUser)},
		"socket_cookie": {scalar: callOnly((*gen).socketCookie)},
		"percpu_kaddr":  {scalar: (*gen).percpuKaddr},
		"uaddr":         {scalar: (*gen).uaddr},

		"str":     {mem: (*gen).str},
		"buf":     {mem: func(g *gen, x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type) { g.buf(x, c, dst) }},
		"usym":    {mem: (*gen).usym},
		"ntop":    {mem: func(g *gen, x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type) { g.ntop(x, c, dst) }},
		"macaddr": {mem: func(g *gen, x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type) { g.macaddr(x, c, dst) }},
		"pton": {mem: func(g *gen, x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type) {
			g.storeRaw(dst, []byte(c.Text))
		}},
		"path": {mem: func(g *gen, x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type) { g.path(x, dst) }},
		"comm": {mem: func(g *gen, x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type) { g.commOf(x, c, dst) }},
	}
}

// callStmt generates a call used as a statement.
func (g *gen) callStmt(x *syntax.CallExpr) {
	if f := builtinFuncs[x.Fun.Name].stmt; f != nil {
		f(g, x, g.p.Calls[x])
		return
	}
	// A value-returning call used as a statement: evaluate it for its
	// effects.
	t := g.typeOf(x)
	if t.InRegister() {
		g.free(g.scalar(x))
	} else {
		g.memOf(x)
	}
}

// report sends errorf's or warnf's record, which locates the call.
func (g *gen) report(kind ActionKind, x *syntax.CallExpr, c *check.Call) {
	a := g.sendArgs(kind, c, x.Args[1:])
	a.End, a.Origin = x.End(), c.Origin
}

// assert runs the calls that report a failed assertion when its
// condition is false.
func (g *gen) assert(x *syntax.CallExpr, c *check.Call) {
	cond := g.scalar(x.Args[0])
	r := g.reg(cond, asm.R0)
	g.free(cond)
	holds := g.newLabel("assert")
	g.emit(asm.JNE.Imm(r, 0, holds))
	for _, s := range c.Then {
		g.callStmt(s)
	}
	g.place(holds)
}

// print sends a map to print, or values.
func (g *gen) print(x *syntax.CallExpr, c *check.Call) {
	if c.Map != nil {
		a := g.action(&Action{Kind: ActPrintMap, Map: g.c.maps[c.Map], Top: c.Top, Div: c.Div})
		g.emitRecord(g.record(a))
		return
	}
	g.sendArgs(ActPrintValue, c, x.Args)
}

// mapOp has user space clear or zero a map.
func (g *gen) mapOp(kind ActionKind, c *check.Call) {
	a := g.action(&Action{Kind: kind, Map: g.c.maps[c.Map]})
	g.emitRecord(g.record(a))
}

// exit sends the exit record, with the status if given, and leaves the
// probe.
func (g *gen) exit(x *syntax.CallExpr, c *check.Call) {
	if len(x.Args) == 0 {
		a := g.action(&Action{Kind: ActExit})
		g.emitRecord(g.record(a))
	} else {
		g.sendArgs(ActExit, nil, x.Args)
	}
	g.emit(asm.Ja.Label(g.exitLabel))
}

// signal sends the signal of the call's argument with helper fn.
func (g *gen) signal(x *syntax.CallExpr, fn asm.BuiltinFunc) {
	op := g.scalar(x.Args[0])
	g.load(asm.R1, op)
	g.free(op)
	g.call(fn)
}

// core stops the process here, from inside the probe; user space dumps
// it and lets it go on.
func (g *gen) core(x *syntax.CallExpr, c *check.Call) {
	g.emit(asm.Mov.Imm(asm.R1, int32(unix.SIGSTOP)))
	g.call(asm.FnSendSignal)
	a := g.action(&Action{Kind: ActCore, Text: c.Text, Args: coreArgs})
	rec := g.record(a)
	g.call(asm.FnGetCurrentPidTgid)
	body := rec.at(headerSize, 8)
	g.emit(asm.StoreMem(body.base, body.off, asm.R0, asm.DWord))
	g.emitRecord(rec)
}

// unwatch has user space remove the watchpoint at an address.
func (g *gen) unwatch(x *syntax.CallExpr, c *check.Call) {
	op := g.scalar(x.Args[0])
	rec := g.record(g.action(&Action{Kind: ActUnwatch, Args: watchArgs}))
	body := rec.at(headerSize, 8)
	g.emit(asm.StoreMem(body.base, body.off, g.reg(op, asm.R1), asm.DWord))
	g.free(op)
	g.emitRecord(rec)
}

// override sets the probed function's return value.
func (g *gen) override(x *syntax.CallExpr, c *check.Call) {
	op := g.scalar(x.Args[0])
	if g.mech == MechFmodRet {
		g.storeRet(g.reg(op, asm.R0))
	} else {
		g.load(asm.R2, op)
		g.emit(asm.Mov.Reg(asm.R1, regCtx))
		g.call(asm.FnOverrideReturn)
	}
	g.free(op)
}

// join reads a NULL-terminated array of string pointers, such as
// execve's argv, and sends up to joinArgs strings.
func (g *gen) join(x *syntax.CallExpr, c *check.Call) {
	strLen := joinLen
	a := g.action(&Action{Kind: ActJoin, Text: c.Text, JoinArgs: joinArgs, JoinLen: strLen})
	a.Args = &check.Type{Kind: check.Buffer, Size: joinArgs * strLen}
	rec := g.record(a)
	body := rec.at(headerSize, joinArgs*strLen)
	g.zero(body)
	base := g.owned(g.scalar(x.Args[0]))
	ptr := g.allocStack(8)
	done := g.newLabel("joined")
	for i := 0; i < joinArgs; i++ {
		// ptr = base[i]; stop at NULL; read the string it points to.
		g.addr(asm.R1, ptr)
		g.emit(asm.Mov.Imm(asm.R2, 8))
		g.load(asm.R3, base)
		g.emit(asm.Add.Imm(asm.R3, int32(8*i)))
		g.call(readHelper(c.Space))
		g.emit(asm.LoadMem(asm.R3, asm.R10, ptr.off, asm.DWord), asm.JEq.Imm(asm.R3, 0, done))
		g.addr(asm.R1, body.at(i*strLen, strLen))
		g.emit(asm.Mov.Imm(asm.R2, int32(strLen)))
		g.call(readStrHelper(c.Space))
	}
	g.place(done)
	g.free(base)
	g.emitRecord(rec)
}

// readStrHelper is the helper that copies a string from memory in space,
// deciding by the address for kernel pointers as readHelper does.
func readStrHelper(space check.AddrSpace) asm.BuiltinFunc {
	if space == check.UserSpace {
		return asm.FnProbeReadUserStr
	}
	return asm.FnProbeReadStr
}

// firstArg is the value of a call's first argument: ksym, strerror and
// the others like them only type it, for user space to print, and kptr
// and uptr for the checker to read through.
func firstArg(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.scalar(x.Args[0]) }

// callOnly adapts a generator that needs only the call, not what the
// checker found of it.
func callOnly(f func(*gen, *syntax.CallExpr) operand) func(*gen, *syntax.CallExpr, *check.Call) operand {
	return func(g *gen, x *syntax.CallExpr, _ *check.Call) operand { return f(g, x) }
}

// stackCall is the stack id of kstack() or ustack().
func stackCall(g *gen, x *syntax.CallExpr, c *check.Call) operand { return g.stackID(g.typeOf(x)) }

// callScalar generates a call whose value fits a register.
func (g *gen) callScalar(x *syntax.CallExpr) operand {
	if f := builtinFuncs[x.Fun.Name].scalar; f != nil {
		return f(g, x, g.p.Calls[x])
	}
	g.c.errorf(x, "%s() has no integer value", x.Fun.Name)
	return immOp(0)
}

// strncmp compares at most n bytes, stopping at a NUL; it yields 0 when
// they match, 1 when not.
func (g *gen) strncmp(x *syntax.CallExpr) operand {
	mark := g.mark()
	defer g.release(mark)
	a, b := g.memOf(x.Args[0]), g.memOf(x.Args[1])
	want := int(g.p.Consts[x.Args[2]].Int)
	n := min(want, a.size, b.size)
	if n == 0 {
		// Nothing to compare is a match; the code below would leave
		// its "differ" branch unreachable, which the verifier rejects.
		return immOp(0)
	}
	same, diff, done := g.newLabel("same"), g.newLabel("differ"), g.newLabel("strncmp")
	for i := 0; i < n; i++ {
		g.emit(
			asm.LoadMem(asm.R1, a.base, a.off+int16(i), asm.Byte),
			asm.LoadMem(asm.R2, b.base, b.off+int16(i), asm.Byte),
			asm.JNE.Reg(asm.R1, asm.R2, diff),
			asm.JEq.Imm(asm.R1, 0, same),
		)
	}
	// The shorter string ended at its size without a NUL: the strings
	// differ if the longer goes on.
	switch {
	case want > n && a.size > n:
		g.emit(asm.LoadMem(asm.R1, a.base, a.off+int16(n), asm.Byte), asm.JNE.Imm(asm.R1, 0, diff))
	case want > n && b.size > n:
		g.emit(asm.LoadMem(asm.R1, b.base, b.off+int16(n), asm.Byte), asm.JNE.Imm(asm.R1, 0, diff))
	}
	g.place(same)
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(done))
	g.place(diff)
	g.emit(asm.Mov.Imm(asm.R0, 1))
	g.place(done)
	return g.fromReg(asm.R0)
}

// callMem generates a call whose value lives in memory into dst.
func (g *gen) callMem(x *syntax.CallExpr, dst mem, t *check.Type) {
	if f := builtinFuncs[x.Fun.Name].mem; f != nil {
		f(g, x, g.p.Calls[x], dst, t)
		return
	}
	if g.typeOf(x).InRegister() {
		g.storeValue(x, dst, t)
		return
	}
	g.c.errorf(x, "cannot generate %s()", x.Fun.Name)
}

// usym stores the address and the process it belongs to, whose symbol
// user space looks up.
func (g *gen) usym(x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type) {
	op := g.scalar(x.Args[0])
	g.emit(asm.StoreMem(dst.base, dst.off, g.reg(op, asm.R0), asm.DWord))
	g.free(op)
	g.call(asm.FnGetCurrentPidTgid)
	g.emit(asm.RSh.Imm(asm.R0, 32), asm.StoreMem(dst.base, dst.off+8, asm.R0, asm.DWord))
}

// str reads a NUL-terminated string into dst; the rest of dst is zero so
// that equal strings are equal keys.
func (g *gen) str(x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type) {
	if g.c.prog.Compat != compat.V017 {
		g.str026(x, c, dst, t)
		return
	}
	src := g.typeOf(x.Args[0])
	if src.Kind == check.Str {
		g.memInto(x.Args[0], dst, t)
		if len(x.Args) == 2 {
			// str(s, n) of a string keeps its first n bytes.
			n := g.scalar(x.Args[1])
			g.truncateStr(dst, n)
		}
		return
	}
	ptr := g.scalar(x.Args[0])
	g.zero(dst)
	size := immOp(int64(dst.size))
	if len(x.Args) == 2 {
		size = g.limit(g.scalar(x.Args[1]), 1, dst.size)
	}
	g.load(asm.R3, ptr)
	g.free(ptr)
	g.load(asm.R2, size)
	g.free(size)
	g.addr(asm.R1, dst)
	g.call(readStrHelper(c.Space))
}

// str026 is str() as bpftrace 0.26.1 reads strings: min(n, max_strlen)
// bytes, NUL included, and one byte more when max_strlen is below 1024,
// so that a string cut short has no NUL within its max_strlen bytes and
// prints with the truncation trailer. The extra byte falls past dst when
// the read may fill it: then a read that fills dst is followed by a read
// of the string's byte at dst's last, which is its NUL if nothing was
// cut.
func (g *gen) str026(x *syntax.CallExpr, c *check.Call, dst mem, t *check.Type) {
	maxLen, pad := g.c.prog.StrLen, 0
	if maxLen < 1024 {
		pad = 1
	}
	src := g.typeOf(x.Args[0])
	if src.Kind == check.Str {
		g.memInto(x.Args[0], dst, t)
		if len(x.Args) == 2 {
			// The read keeps min(n, max)+pad bytes, its NUL among them.
			n := g.limit(g.scalar(x.Args[1]), int64(pad), maxLen+pad)
			if n.kind == opImm {
				n.imm--
			} else {
				r := g.work(n, asm.R1)
				g.emit(asm.Sub.Imm(r, 1))
				g.set(n, r)
			}
			g.truncateStr(dst, n)
		}
		return
	}
	ptr := g.scalar(x.Args[0])
	g.zero(dst)
	want := immOp(int64(maxLen + pad))
	if len(x.Args) == 2 {
		want = g.limit(g.scalar(x.Args[1]), int64(pad), maxLen+pad)
	}
	if want.kind == opImm && want.imm <= int64(dst.size) {
		g.load(asm.R3, ptr)
		g.free(ptr)
		g.movImm(asm.R2, want.imm)
		g.addr(asm.R1, dst)
		g.call(readStrHelper(c.Space))
		return
	}
	// want is at most dst.size+1: read dst.size bytes at most, and the
	// last byte again when want is the larger and the string filled dst.
	done := g.newLabel("strdone")
	if want.kind == opImm {
		g.movImm(asm.R2, int64(dst.size))
	} else {
		fits := g.newLabel("strfits")
		g.load(asm.R2, want)
		g.emit(asm.JLE.Imm(asm.R2, int32(dst.size), fits), asm.Mov.Imm(asm.R2, int32(dst.size)))
		g.place(fits)
	}
	g.load(asm.R3, ptr)
	g.addr(asm.R1, dst)
	g.call(readStrHelper(c.Space))
	if want.kind != opImm {
		g.load(asm.R1, want)
		g.emit(asm.JLE.Imm(asm.R1, int32(dst.size), done))
	}
	g.free(want)
	g.emit(asm.JNE.Imm(asm.R0, int32(dst.size), done))
	last := dst.at(dst.size-1, 1)
	g.addr(asm.R1, last)
	g.emit(asm.Mov.Imm(asm.R2, 1))
	g.load(asm.R3, ptr)
	g.free(ptr)
	g.emit(asm.Add.Imm(asm.R3, int32(dst.size-1)))
	g.call(readHelper(c.Space))
	g.place(done)
}

// limit returns min(n+extra, most), and 1 for 0, in a register bounded
// for the verifier: the size of a read that keeps n characters and a
// NUL when extra is 1.
func (g *gen) limit(n operand, extra int64, most int) operand {
	if n.kind == opImm {
		return immOp(max(min(n.imm+extra, int64(most)), 1))
	}
	r := g.work(n, asm.R1)
	ok, done := g.newLabel("fits"), g.newLabel("limited")
	g.emit(asm.Add.Imm(r, int32(extra)), asm.JLE.Imm(r, int32(most), ok))
	g.emit(asm.Mov.Imm(r, int32(most)), asm.Ja.Label(done))
	g.place(ok)
	// Negative lengths wrapped to huge values above; zero means nothing.
	g.emit(asm.JNE.Imm(r, 0, done), asm.Mov.Imm(r, 1))
	g.place(done)
	g.set(n, r)
	return n
}

// truncateStr puts a NUL at offset n of a string in dst, if n is inside.
func (g *gen) truncateStr(dst mem, n operand) {
	if n.kind == opImm {
		if n.imm >= 0 && n.imm < int64(dst.size) {
			g.zero(dst.at(int(n.imm), dst.size-int(n.imm)))
		}
		return
	}
	// A variable length: clear byte by byte from n on.
	r := g.reg(n, asm.R1)
	for i := 0; i < dst.size; i++ {
		skip := g.newLabel("keep")
		g.emit(asm.JGT.Imm(r, int32(i), skip), asm.StoreImm(dst.base, dst.off+int16(i), 0, asm.Byte))
		g.place(skip)
	}
	g.free(n)
}

// buf reads raw bytes; the last byte of dst holds the length read.
func (g *gen) buf(x *syntax.CallExpr, c *check.Call, dst mem) {
	n := dst.size - 1
	src := g.typeOf(x.Args[0])
	body := dst.at(0, n)
	if v, ok := g.p.Consts[x.Args[0]]; ok && v.IsStr {
		// All n bytes of a literal count: no NUL takes the last one.
		b := make([]byte, n)
		copy(b, v.Str)
		g.storeRaw(body, b)
	} else if src.Kind == check.Array || src.Kind == check.Str {
		if l, ok := x.Args[0].(*syntax.FieldExpr); ok {
			g.readMem(g.placeOf(l), src, nil, body)
		} else {
			g.memInto(x.Args[0], body, &check.Type{Kind: check.Str, Size: n})
		}
	} else if g.typeOf(x).VarLen {
		// Read min(len, n) bytes, the bound in a register the verifier
		// can follow, and record how many in the length byte.
		g.zero(dst)
		size := g.owned(g.scalar(x.Args[1]))
		r := g.work(size, asm.R2)
		fits := g.newLabel("buflen")
		g.emit(asm.JLE.Imm(r, int32(n), fits), asm.Mov.Imm(r, int32(n)))
		g.place(fits)
		g.set(size, r)
		ptr := g.scalar(x.Args[0])
		g.load(asm.R3, ptr)
		g.free(ptr)
		g.load(asm.R2, size)
		g.addr(asm.R1, body)
		g.call(readHelper(c.Space))
		g.emit(asm.StoreMem(dst.base, dst.off+int16(n), g.reg(size, asm.R0), asm.Byte))
		g.free(size)
		return
	} else {
		ptr := g.scalar(x.Args[0])
		g.load(asm.R3, ptr)
		g.free(ptr)
		g.addr(asm.R1, body)
		g.emit(asm.Mov.Imm(asm.R2, int32(n)))
		g.call(readHelper(c.Space))
	}
	g.emit(asm.StoreImm(dst.base, dst.off+int16(n), int64(n&0xff), asm.Byte))
}

// ntop stores an address family word and 16 address bytes.
func (g *gen) ntop(x *syntax.CallExpr, c *check.Call, dst mem) {
	g.zero(dst)
	addr := x.Args[len(x.Args)-1]
	at := g.typeOf(addr)
	family := int64(2)
	v, known := g.p.Consts[x.Args[0]]
	switch {
	case len(x.Args) == 2 && !known:
		family = 0 // in the first word of dst
		op := g.scalar(x.Args[0])
		g.emit(asm.StoreMem(dst.base, dst.off, g.reg(op, asm.R0), asm.DWord))
		g.free(op)
	case len(x.Args) == 2:
		family = int64(v.Int)
	case (at.Kind == check.Array || at.Kind == check.Str) && at.Size == 16:
		family = 10
	}
	if family != 0 {
		g.storeImm(dst.base, dst.off, family, asm.DWord)
	}
	body := dst.at(8, 16)
	switch {
	case at.Kind == check.Array || at.Kind == check.Str:
		g.readMem(g.placeOf(addr), at, nil, body.at(0, at.Size))
	case at.Kind == check.Int && family != 10:
		// An integer is an IPv4 address whatever the family says.
		op := g.scalar(addr)
		g.emit(asm.StoreMem(body.base, body.off, g.reg(op, asm.R0), asm.Word))
		g.free(op)
	default:
		ptr := g.scalar(addr)
		g.load(asm.R3, ptr)
		g.free(ptr)
		g.addr(asm.R1, body)
		switch family {
		case 0:
			six, read := g.newLabel("ntop6"), g.newLabel("ntopread")
			g.emit(
				asm.LoadMem(asm.R2, dst.base, dst.off, asm.DWord),
				asm.JEq.Imm(asm.R2, 10, six),
				asm.Mov.Imm(asm.R2, 4),
				asm.Ja.Label(read),
			)
			g.place(six)
			g.emit(asm.Mov.Imm(asm.R2, 16))
			g.place(read)
		case 10:
			g.emit(asm.Mov.Imm(asm.R2, 16))
		default:
			g.emit(asm.Mov.Imm(asm.R2, 4))
		}
		g.call(readHelper(c.Space))
	}
}
