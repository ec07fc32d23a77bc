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
	return a
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

// callStmt generates a call used as a statement.
func (g *gen) callStmt(x *syntax.CallExpr) {
	c := g.p.Calls[x]
	switch x.Fun.Name {
	case "printf":
		g.sendArgs(ActPrintf, c, x.Args[1:])
	case "system":
		g.sendArgs(ActSystem, c, x.Args[1:])
	case "cat":
		g.sendArgs(ActCat, c, x.Args[1:])
	case "errorf", "warnf":
		kind := ActErrorf
		if x.Fun.Name == "warnf" {
			kind = ActWarnf
		}
		a := g.sendArgs(kind, c, x.Args[1:])
		a.End, a.Origin = x.End(), c.Origin
	case "assert":
		cond := g.scalar(x.Args[0])
		r := g.reg(cond, asm.R0)
		g.free(cond)
		holds := g.newLabel("assert")
		g.emit(asm.JNE.Imm(r, 0, holds))
		for _, s := range c.Then {
			g.callStmt(s)
		}
		g.place(holds)
	case "static_assert", "assert_str":
		// It held when the program was compiled; nothing is left to do.
	case "print":
		if c.Map != nil {
			a := g.action(&Action{Kind: ActPrintMap, Map: g.c.maps[c.Map], Top: c.Top, Div: c.Div})
			g.emitRecord(g.record(a))
			return
		}
		g.sendArgs(ActPrintValue, c, x.Args)
	case "clear", "zero":
		kind := ActClear
		if x.Fun.Name == "zero" {
			kind = ActZero
		}
		a := g.action(&Action{Kind: kind, Map: g.c.maps[c.Map]})
		g.emitRecord(g.record(a))
	case "exit":
		if len(x.Args) == 0 {
			a := g.action(&Action{Kind: ActExit})
			g.emitRecord(g.record(a))
		} else {
			g.sendArgs(ActExit, nil, x.Args)
		}
		g.emit(asm.Ja.Label(g.exitLabel))
	case "time":
		a := g.action(&Action{Kind: ActTime, Text: c.Text})
		g.emitRecord(g.record(a))
	case "join":
		g.join(x, c)
	case "delete":
		for _, e := range c.Elems {
			g.deleteElem(e)
		}
	case "signal", "signal_thread":
		op := g.scalar(x.Args[0])
		g.load(asm.R1, op)
		g.free(op)
		if x.Fun.Name == "signal_thread" {
			g.call(asm.FnSendSignalThread)
		} else {
			g.call(asm.FnSendSignal)
		}
	case "core":
		// The process stops here, from inside the probe; user space
		// dumps it and lets it go on.
		g.emit(asm.Mov.Imm(asm.R1, int32(unix.SIGSTOP)))
		g.call(asm.FnSendSignal)
		a := g.action(&Action{Kind: ActCore, Text: c.Text, Args: coreArgs})
		rec := g.record(a)
		g.call(asm.FnGetCurrentPidTgid)
		body := rec.at(headerSize, 8)
		g.emit(asm.StoreMem(body.base, body.off, asm.R0, asm.DWord))
		g.emitRecord(rec)
	case "unwatch":
		op := g.scalar(x.Args[0])
		rec := g.record(g.action(&Action{Kind: ActUnwatch, Args: watchArgs}))
		body := rec.at(headerSize, 8)
		g.emit(asm.StoreMem(body.base, body.off, g.reg(op, asm.R1), asm.DWord))
		g.free(op)
		g.emitRecord(rec)
	case "override":
		op := g.scalar(x.Args[0])
		if g.mech == MechFmodRet {
			g.emit(asm.StoreMem(asm.R10, g.retSlot, g.reg(op, asm.R0), asm.DWord))
		} else {
			g.load(asm.R2, op)
			g.emit(asm.Mov.Reg(asm.R1, regCtx))
			g.call(asm.FnOverrideReturn)
		}
		g.free(op)
	default:
		// A value-returning call used as a statement: evaluate it for
		// its effects.
		t := g.typeOf(x)
		if t.InRegister() {
			g.free(g.scalar(x))
		} else {
			g.memOf(x)
		}
	}
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

// callScalar generates a call whose value fits a register.
func (g *gen) callScalar(x *syntax.CallExpr) operand {
	c := g.p.Calls[x]
	switch x.Fun.Name {
	case "ksym", "kptr", "uptr":
		return g.scalar(x.Args[0])
	case "kstack", "ustack":
		return g.stackID(g.typeOf(x))
	case "reg":
		off, _ := check.RegisterOffset(c.Text)
		return g.ctxWord(int16(off))
	case "strncmp":
		return g.strncmp(x)
	case "strftime":
		return g.scalar(x.Args[1])
	case "strerror", "cgroup_path", "syscall_name", "signal_name":
		return g.scalar(x.Args[0])
	case "bswap":
		return g.bswap(x)
	case "strcontains", "strstr":
		return g.search(x, x.Fun.Name == "strstr")
	case "strlen":
		return g.strlen(x)
	case "skboutput":
		return g.skboutput(x, c)
	case "delete":
		return g.deleted(c.Elems)
	case "has_key":
		return g.hasKey(c.Elems[0])
	case "len":
		if c.Map == nil {
			return g.stackLen(g.typeOf(x.Args[0]))
		}
		return g.mapLen(c.Map)
	case "pid", "tid":
		return g.pidTid(x.Fun.Name, c.Text)
	case "nsecs":
		return g.nsecs(c.Text)
	case "is_err":
		return g.isErr(x)
	case "memcmp":
		return g.memcmp(x)
	case "find":
		return g.find(x, c)
	case "write_user":
		return g.writeUser(x)
	case "socket_cookie":
		return g.socketCookie(x)
	case "percpu_kaddr":
		return g.percpuKaddr(x, c)
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
	c := g.p.Calls[x]
	switch x.Fun.Name {
	case "str":
		g.str(x, c, dst, t)
	case "buf":
		g.buf(x, c, dst)
	case "usym":
		op := g.scalar(x.Args[0])
		g.emit(asm.StoreMem(dst.base, dst.off, g.reg(op, asm.R0), asm.DWord))
		g.free(op)
		g.call(asm.FnGetCurrentPidTgid)
		g.emit(asm.RSh.Imm(asm.R0, 32), asm.StoreMem(dst.base, dst.off+8, asm.R0, asm.DWord))
	case "ntop":
		g.ntop(x, c, dst)
	case "macaddr":
		g.macaddr(x, c, dst)
	case "pton":
		g.storeRaw(dst, []byte(c.Text))
	case "path":
		g.path(x, dst)
	default:
		if g.typeOf(x).InRegister() {
			g.storeValue(x, dst, t)
			return
		}
		g.c.errorf(x, "cannot generate %s()", x.Fun.Name)
	}
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
	if maxLen < check.MaxStrLen {
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
