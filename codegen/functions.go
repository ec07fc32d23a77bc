package codegen

import (
	"strings"
	"unicode"

	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// bswap reverses the bytes of an integer of 2, 4 or 8 bytes; one byte is
// left as it is.
func (g *gen) bswap(x *syntax.CallExpr) operand {
	op := g.owned(g.scalar(x.Args[0]))
	size := g.typeOf(x.Args[0]).Size
	r := g.work(op, asm.R0)
	switch size {
	case 1:
		g.emit(asm.And.Imm(r, 0xff))
	case 2:
		g.emit(asm.HostTo(asm.BE, r, asm.Half))
	case 4:
		g.emit(asm.HostTo(asm.BE, r, asm.Word))
	default:
		g.emit(asm.HostTo(asm.BE, r, asm.DWord))
	}
	g.set(op, r)
	return op
}

// search looks for the needle at every position of the haystack,
// stopping at the haystack's NUL, and yields where it starts or -1
// (strstr), or whether it is there (strcontains); an empty needle is
// found at 0, as in bpftrace. A bounded loop walks the haystack, each
// turn comparing the needle unrolled, so the code grows with the needle
// alone; it reads no byte past either string's buffer. The verifier
// follows that loop turn by turn, so past maxComparisons the search
// runs through bpf_loop instead (searchLoop), whose callback it checks
// once.
func (g *gen) search(x *syntax.CallExpr, where bool) operand {
	hay, needle := g.typeOf(x.Args[0]).Size, g.typeOf(x.Args[1]).Size
	if n := hay * needle; n > maxComparisons {
		if g.c.opts.HasLoop != nil && g.c.opts.HasLoop() {
			return g.searchLoop(x, where)
		}
		g.c.errorf(x, "%s(): searching %d bytes for up to %d is %d comparisons, more than the %d the verifier is known to accept; "+
			"shorten the strings with str(s, N)", x.Fun.Name, hay, needle, n, maxComparisons)
		return immOp(0)
	}
	mark := g.mark()
	defer g.release(mark)
	a, b := g.memOf(x.Args[0]), g.memOf(x.Args[1])
	found, missing, done := g.newLabel("found"), g.newLabel("missing"), g.newLabel("search")
	// R3 points at the haystack, R4 is the position tried.
	g.addr(asm.R3, a)
	g.emit(asm.Mov.Imm(asm.R4, 0))
	g.emit(asm.LoadMem(asm.R2, b.base, b.off, asm.Byte), asm.JEq.Imm(asm.R2, 0, found))
	loop, next := g.newLabel("search"), g.newLabel("next")
	g.place(loop)
	g.emit(
		asm.JGE.Imm(asm.R4, int32(a.size), missing),
		asm.Mov.Reg(asm.R5, asm.R3),
		asm.Add.Reg(asm.R5, asm.R4),
		asm.LoadMem(asm.R1, asm.R5, 0, asm.Byte),
		asm.JEq.Imm(asm.R1, 0, missing),
	)
	for j := 0; j < b.size; j++ {
		g.emit(asm.LoadMem(asm.R2, b.base, b.off+int16(j), asm.Byte))
		if j > 0 {
			// The needle ended: found. Else the haystack must still
			// have a byte j past the position, or no later one can
			// hold the needle either.
			g.emit(
				asm.JEq.Imm(asm.R2, 0, found),
				asm.JGE.Imm(asm.R4, int32(a.size-j), missing),
			)
		}
		g.emit(
			asm.LoadMem(asm.R1, asm.R5, int16(j), asm.Byte),
			asm.JNE.Reg(asm.R1, asm.R2, next),
		)
	}
	// The needle's whole buffer matched.
	g.emit(asm.Ja.Label(found))
	g.place(next)
	g.emit(asm.Add.Imm(asm.R4, 1), asm.Ja.Label(loop))
	g.place(found)
	if where {
		g.emit(asm.Mov.Reg(asm.R0, asm.R4), asm.Ja.Label(done))
		g.place(missing)
		g.emit(asm.Mov.Imm(asm.R0, -1))
	} else {
		g.emit(asm.Mov.Imm(asm.R0, 1), asm.Ja.Label(done))
		g.place(missing)
		g.emit(asm.Mov.Imm(asm.R0, 0))
	}
	g.place(done)
	return g.fromReg(asm.R0)
}

// strlen counts the bytes of a string before its NUL, or its whole
// buffer when it has none.
func (g *gen) strlen(x *syntax.CallExpr) operand {
	mark := g.mark()
	defer g.release(mark)
	s := g.memOf(x.Args[0])
	loop, done := g.newLabel("strlen"), g.newLabel("strlendone")
	g.addr(asm.R3, s)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.place(loop)
	g.emit(
		asm.JGE.Imm(asm.R0, int32(s.size), done),
		asm.Mov.Reg(asm.R5, asm.R3),
		asm.Add.Reg(asm.R5, asm.R0),
		asm.LoadMem(asm.R1, asm.R5, 0, asm.Byte),
		asm.JEq.Imm(asm.R1, 0, done),
		asm.Add.Imm(asm.R0, 1),
		asm.Ja.Label(loop),
	)
	g.place(done)
	return g.fromReg(asm.R0)
}

// maxComparisons bounds strcontains' haystack size times needle size
// (sizes with the NUL), as measured on Linux 6.18: 64x64, 1024x4 and
// 256x17 load; 1024x5, 512x9 and 96x96 make the verifier fail with
// EFAULT.
const maxComparisons = 4096

// Words of the struct a search run by bpf_loop hands its callback.
const (
	searchScr  = 0 // the program's scratch memory
	searchAt   = 8 // where the needle was found, -1 until it is
	searchSize = 16
)

// maxUnrolled is the longest needle whose comparison searchLoop's
// callback unrolls; a longer one is compared by a loop, which the
// verifier follows byte by byte but only once, not once per position.
const maxUnrolled = 64

// searchLoop is search through bpf_loop: one round per position of the
// haystack, each comparing the needle there, and the first match stops
// the rounds and records its position in the struct the callback is
// handed. The callback reaches the strings through that struct: one on
// this frame's stack at the struct's distance from them, one in the
// scratch map through the pointer the struct holds.
func (g *gen) searchLoop(x *syntax.CallExpr, where bool) operand {
	mark := g.mark()
	defer g.release(mark)
	a, b := g.memOf(x.Args[0]), g.memOf(x.Args[1])
	cs := g.allocStack(searchSize)
	if a.base == regScratch || b.base == regScratch {
		g.emit(asm.StoreMem(cs.base, cs.off+searchScr, regScratch, asm.DWord))
	}
	g.storeImm(cs.base, cs.off+searchAt, -1, asm.DWord)
	empty, done := g.newLabel("searchempty"), g.newLabel("searchdone")
	g.emit(asm.LoadMem(asm.R2, b.base, b.off, asm.Byte), asm.JEq.Imm(asm.R2, 0, empty))
	cb := g.newLabel("search")
	g.emit(asm.Mov.Imm(asm.R1, int32(a.size)),
		asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(cb))
	g.addr(asm.R3, cs)
	g.emit(asm.Mov.Imm(asm.R4, 0))
	g.call(asm.FnLoop)
	g.emit(asm.LoadMem(asm.R0, cs.base, cs.off+searchAt, asm.DWord), asm.Ja.Label(done))
	g.place(empty)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.place(done)
	if !where {
		missing, found := g.newLabel("missing"), g.newLabel("found")
		g.emit(asm.JEq.Imm(asm.R0, -1, missing), asm.Mov.Imm(asm.R0, 1), asm.Ja.Label(found))
		g.place(missing)
		g.emit(asm.Mov.Imm(asm.R0, 0))
		g.place(found)
	}
	g.subprog(cb, 2, func() { g.searchPosition(a, b, cs) })
	return g.fromReg(asm.R0)
}

// searchPosition is the callback of searchLoop, called with the
// position in R1 and the struct at cs in R2: it returns 1 to stop the
// rounds (the needle is there, recorded in the struct, or the haystack
// ends before it could be) and 0 to try the next position.
func (g *gen) searchPosition(a, b, cs mem) {
	found, stop, next := g.newLabel("found"), g.newLabel("stop"), g.newLabel("next")
	// R3 points at the haystack, R4 at the needle. Each byte of the
	// haystack is reached from its index, bounded first: the verifier
	// knows the position only as a range.
	g.reach(asm.R3, a, cs)
	g.reach(asm.R4, b, cs)
	g.emit(
		asm.JGE.Imm(asm.R1, int32(a.size), stop),
		asm.Mov.Reg(asm.R0, asm.R3), asm.Add.Reg(asm.R0, asm.R1), asm.LoadMem(asm.R0, asm.R0, 0, asm.Byte),
		asm.JEq.Imm(asm.R0, 0, stop),
	)
	if b.size <= maxUnrolled {
		for j := 0; j < b.size; j++ {
			g.emit(asm.LoadMem(asm.R5, asm.R4, int16(j), asm.Byte))
			if j > 0 {
				// As in search: the needle ended, or the haystack
				// has no byte j past the position.
				g.emit(asm.JEq.Imm(asm.R5, 0, found),
					asm.Mov.Reg(asm.R0, asm.R1), asm.Add.Imm(asm.R0, int32(j)), asm.JGE.Imm(asm.R0, int32(a.size), stop))
			} else {
				g.emit(asm.Mov.Reg(asm.R0, asm.R1))
			}
			g.emit(asm.Add.Reg(asm.R0, asm.R3), asm.LoadMem(asm.R0, asm.R0, 0, asm.Byte), asm.JNE.Reg(asm.R0, asm.R5, next))
		}
	} else {
		// R5 counts the needle's bytes; the needle's first byte is not
		// its NUL, which searchLoop saw to. The verifier goes on past
		// a conditional jump first and keeps the jump's target for
		// later: here what goes on leaves the callback, and the targets
		// go on comparing, so that no more than one of them waits at a
		// time while the verifier follows the loop byte by byte.
		loop, more, inside, same := g.newLabel("compare"), g.newLabel("more"), g.newLabel("inside"), g.newLabel("same")
		g.emit(asm.Mov.Imm(asm.R5, 0))
		g.place(loop)
		g.emit(
			asm.JGE.Imm(asm.R5, int32(b.size), found),
			asm.Mov.Reg(asm.R0, asm.R4), asm.Add.Reg(asm.R0, asm.R5), asm.LoadMem(asm.R0, asm.R0, 0, asm.Byte),
			asm.JNE.Imm(asm.R0, 0, more), asm.Ja.Label(found),
		)
		g.place(more)
		g.emit(asm.Mov.Reg(asm.R6, asm.R1), asm.Add.Reg(asm.R6, asm.R5), asm.JLT.Imm(asm.R6, int32(a.size), inside), asm.Ja.Label(stop))
		g.place(inside)
		g.emit(asm.Add.Reg(asm.R6, asm.R3), asm.LoadMem(asm.R6, asm.R6, 0, asm.Byte), asm.JEq.Reg(asm.R6, asm.R0, same), asm.Ja.Label(next))
		g.place(same)
		g.emit(asm.Add.Imm(asm.R5, 1), asm.Ja.Label(loop))
	}
	// The needle's whole buffer matched.
	g.place(found)
	g.emit(asm.StoreMem(asm.R2, searchAt, asm.R1, asm.DWord))
	g.place(stop)
	g.emit(asm.Mov.Imm(asm.R0, 1), asm.Return())
	g.place(next)
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// reach puts in dst, within searchLoop's callback, the address of m
// through the struct at cs, whose address is in R2.
func (g *gen) reach(dst asm.Register, m, cs mem) {
	if m.base == regScratch {
		g.emit(asm.LoadMem(dst, asm.R2, searchScr, asm.DWord))
	} else {
		g.emit(asm.Mov.Reg(dst, asm.R2))
		m.off -= cs.off
	}
	if m.off != 0 {
		g.emit(asm.Add.Imm(dst, int32(m.off)))
	}
}

// macaddr copies 6 bytes from an array or from memory at an address.
func (g *gen) macaddr(x *syntax.CallExpr, c *check.Call, dst mem) {
	at := g.typeOf(x.Args[0])
	if at.Kind == check.Array || at.Kind == check.Str {
		if _, ok := syntax.Unparen(x.Args[0]).(*syntax.FieldExpr); ok {
			// A char[6] is read as bytes: as a string, its last byte
			// would make way for a NUL.
			bytes := &check.Type{Kind: check.Array, Size: at.Size, Len: at.Size, Elem: check.TUint8}
			g.readMem(g.placeOf(x.Args[0]), bytes, nil, dst)
		} else {
			g.memInto(x.Args[0], dst, at)
		}
		return
	}
	ptr := g.scalar(x.Args[0])
	g.load(asm.R3, ptr)
	g.free(ptr)
	g.addr(asm.R1, dst)
	g.emit(asm.Mov.Imm(asm.R2, int32(dst.size)))
	g.call(readHelper(c.Space))
}

// path writes the path of a struct path with bpf_d_path, which the kernel
// allows in trampolines of an allowlist of functions and in iterators.
func (g *gen) path(x *syntax.CallExpr, dst mem) {
	g.zero(dst)
	at := g.typeOf(x.Args[0])
	if at.Kind == check.Record {
		l := g.placeOf(x.Args[0])
		g.ptrArg(asm.R1, l)
		if l.kind == locPtr {
			g.free(l.ptr)
		}
	} else {
		op := g.scalar(x.Args[0])
		g.load(asm.R1, op)
		g.free(op)
	}
	g.addr(asm.R2, dst)
	g.emit(asm.Mov.Imm(asm.R3, int32(dst.size)))
	g.call(asm.FnDPath)
}

// checkLevel is the -k level that reports failures of helper fn: 1 for
// map updates and deletions and signals, 2 (-kk) for memory reads; 0
// for helpers never checked. Reads of memory the program owns
// (probe_read_kernel in copyMem) cannot fail and are not listed.
func checkLevel(fn asm.BuiltinFunc) int {
	switch fn {
	case asm.FnMapUpdateElem, asm.FnMapDeleteElem, asm.FnSendSignal:
		return 1
	case asm.FnProbeRead, asm.FnProbeReadUser, asm.FnProbeReadStr, asm.FnProbeReadUserStr,
		asm.FnProbeReadKernelStr, asm.FnDPath, asm.FnMapLookupElem:
		return 2
	}
	return 0
}

// helperErrorArgs is the record of a helper failure: its error number.
var helperErrorArgs = check.TupleType([]*check.Type{check.TInt64})

// helperError sends a record when the helper just called returned a
// negative error in R0, which it leaves as it was.
func (g *gen) helperError(fn asm.BuiltinFunc) {
	mark := g.mark()
	defer g.release(mark)
	ok := g.newLabel("helper_ok")
	g.emit(asm.JSGE.Imm(asm.R0, 0, ok))
	a := g.action(&Action{Kind: ActHelperError, Text: helperName(fn), Args: helperErrorArgs, End: g.curEnd})
	rec := g.record(a)
	body := rec.at(headerSize, 8)
	g.emit(asm.StoreMem(body.base, body.off, asm.R0, asm.DWord))
	g.emitRecord(rec)
	g.emit(asm.LoadMem(asm.R0, body.base, body.off, asm.DWord))
	g.place(ok)
}

// helperName is the name bpftrace gives a helper in its -k warnings.
func helperName(fn asm.BuiltinFunc) string {
	name := strings.TrimPrefix(fn.String(), "Fn")
	var b strings.Builder
	for i, r := range name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// skboutput sends a packet with bpf_skb_output: a header naming the
// call, the time and the length, to which the kernel appends the first
// len bytes of the struct sk_buff's data. It yields what the helper
// returns, 0 or a negative error, as a uint32 as in bpftrace.
func (g *gen) skboutput(x *syntax.CallExpr, c *check.Call) operand {
	id := len(g.c.out.SkbOutputs)
	g.c.out.SkbOutputs = append(g.c.out.SkbOutputs, &SkbOutput{Path: c.Text, Offset: c.Offset})
	mark := g.mark()
	defer g.release(mark)
	hdr := g.alloc(PacketHeaderSize, 8)
	g.emit(asm.Mov.Imm(asm.R0, int32(id)), asm.StoreMem(hdr.base, hdr.off, asm.R0, asm.DWord))
	g.call(asm.FnKtimeGetBootNs)
	g.emit(asm.StoreMem(hdr.base, hdr.off+8, asm.R0, asm.DWord))
	skb := g.scalar(x.Args[1])
	n := g.scalar(x.Args[2])
	// The kernel takes the length from the upper half of the flags, and
	// BPF_F_CURRENT_CPU, all ones, from the lower.
	g.load(asm.R3, n)
	g.free(n)
	g.emit(
		asm.LSh.Imm(asm.R3, 32),
		asm.RSh.Imm(asm.R3, 32),
		asm.StoreMem(hdr.base, hdr.off+16, asm.R3, asm.DWord),
		asm.LSh.Imm(asm.R3, 32),
		asm.LoadImm(asm.R4, 0xffffffff, asm.DWord),
		asm.Or.Reg(asm.R3, asm.R4),
	)
	g.load(asm.R1, skb)
	g.free(skb)
	g.mapPtr(asm.R2, PacketsMap)
	g.addr(asm.R4, hdr)
	g.emit(asm.Mov.Imm(asm.R5, PacketHeaderSize))
	g.call(asm.FnSkbOutput)
	g.emit(asm.Mov.Reg32(asm.R0, asm.R0))
	return g.fromReg(asm.R0)
}

// maxErrno is the largest error code an error pointer holds (MAX_ERRNO).
const maxErrno = 4095

// isErr yields 1 when its argument is an error pointer: one of the last
// maxErrno addresses, as the kernel's IS_ERR().
func (g *gen) isErr(x *syntax.CallExpr) operand {
	p := g.owned(g.scalar(x.Args[0]))
	r := g.work(p, asm.R0)
	yes, done := g.newLabel("iserr"), g.newLabel("iserrdone")
	g.emit(asm.JGE.Imm(r, -maxErrno, yes), asm.Mov.Imm(r, 0), asm.Ja.Label(done))
	g.place(yes)
	g.emit(asm.Mov.Imm(r, 1))
	g.place(done)
	g.set(p, r)
	return p
}

// valueMem returns memory holding the value of x: its own when it has
// a home, else a copy, integers and pointers included.
func (g *gen) valueMem(x syntax.Expr) mem {
	t := g.typeOf(x)
	if !t.InRegister() {
		return g.memOf(x)
	}
	m := g.alloc(t.Size, t.Align())
	g.storeValue(x, m, t)
	return m
}

// memcmp compares the first count bytes of two values as signed chars:
// the difference of the first pair that differs, or 0. A variable count
// stops the comparison early; the check bounded a constant one.
func (g *gen) memcmp(x *syntax.CallExpr) operand {
	mark := g.mark()
	defer g.release(mark)
	a, b := g.valueMem(x.Args[0]), g.valueMem(x.Args[1])
	n := min(a.size, b.size)
	count := g.scalar(x.Args[2])
	if count.kind == opImm {
		n = min(n, int(count.imm))
	}
	if n <= 0 {
		g.free(count)
		return immOp(0)
	}
	var rc asm.Register
	if count.kind != opImm {
		rc = g.reg(count, asm.R3)
		if rc != asm.R3 {
			g.emit(asm.Mov.Reg(asm.R3, rc))
			rc = asm.R3
		}
	}
	g.free(count)
	same, diff, done := g.newLabel("memsame"), g.newLabel("memdiff"), g.newLabel("memcmp")
	for i := 0; i < n; i++ {
		if count.kind != opImm {
			g.emit(asm.JLE.Imm(rc, int32(i), same))
		}
		g.emit(
			asm.LoadMem(asm.R1, a.base, a.off+int16(i), asm.Byte),
			asm.LoadMem(asm.R2, b.base, b.off+int16(i), asm.Byte),
			asm.JNE.Reg(asm.R1, asm.R2, diff),
		)
	}
	g.place(same)
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(done))
	g.place(diff)
	g.extend(asm.R1, 1, true)
	g.extend(asm.R2, 1, true)
	g.emit(asm.Mov.Reg(asm.R0, asm.R1), asm.Sub.Reg(asm.R0, asm.R2))
	g.place(done)
	return g.fromReg(asm.R0)
}

// find looks the element up once: when it is there, its value goes to
// the variable, converted to the variable's type, and the result is 1.
func (g *gen) find(x *syntax.CallExpr, c *check.Call) operand {
	e := c.Elems[0]
	m := g.mapOf(e)
	v := x.Args[2].(*syntax.VarExpr)
	dst, vt := g.vars[v.Name], g.p.Vars[v.Name].Type
	mark := g.mark()
	g.lookup(m, g.key(e, m))
	g.release(mark)
	done := g.newLabel("found")
	g.emit(asm.JEq.Imm(asm.R0, 0, done))
	if vt.InRegister() {
		g.loadInt(asm.R1, asm.R0, 0, m.Value)
		g.normalize(asm.R1, vt)
		g.emit(asm.StoreMem(dst.base, dst.off, asm.R1, asm.DWord))
	} else {
		g.emit(asm.Mov.Reg(asm.R3, asm.R0))
		g.convertMem(dst, vt, mem{base: asm.R3, size: m.Value.Size}, m.Value)
	}
	g.emit(asm.Mov.Imm(asm.R0, 1))
	g.place(done)
	return g.fromReg(asm.R0)
}

// writeUser writes len bytes of a value the program holds to a user
// address with bpf_probe_write_user; the result is 1 when it did. The
// kernel takes only a size the verifier can bound: a variable len is
// cut to the value's size, and nothing written is no failure.
func (g *gen) writeUser(x *syntax.CallExpr) operand {
	mark := g.mark()
	defer g.release(mark)
	src := g.valueMem(x.Args[1])
	dst := g.scalar(x.Args[0])
	n := g.scalar(x.Args[2])
	done := g.newLabel("written")
	if n.kind == opImm {
		g.emit(asm.Mov.Imm(asm.R3, int32(n.imm)))
	} else {
		// JLT, not JEQ: every verifier learns from it that the size
		// left is at least 1, which the helper requires.
		g.load(asm.R3, n)
		g.emit(asm.Mov.Imm(asm.R0, 1), asm.JLT.Imm(asm.R3, 1, done))
		fits := g.newLabel("writelen")
		g.emit(asm.JLE.Imm(asm.R3, int32(src.size), fits), asm.Mov.Imm(asm.R3, int32(src.size)))
		g.place(fits)
	}
	g.free(n)
	g.load(asm.R1, dst)
	g.free(dst)
	g.addr(asm.R2, src)
	g.call(asm.FnProbeWriteUser)
	yes := g.newLabel("wrote")
	g.emit(asm.JEq.Imm(asm.R0, 0, yes), asm.Mov.Imm(asm.R0, 0), asm.Ja.Label(done))
	g.place(yes)
	g.emit(asm.Mov.Imm(asm.R0, 1))
	g.place(done)
	return g.fromReg(asm.R0)
}

// socketCookie asks bpf_get_socket_cookie for the cookie of a socket
// the probe was given.
func (g *gen) socketCookie(x *syntax.CallExpr) operand {
	sk := g.scalar(x.Args[0])
	g.load(asm.R1, sk)
	g.free(sk)
	return g.helperResult(asm.FnGetSocketCookie)
}

// pseudoBTFID marks a 64-bit load of a kernel variable by its BTF id
// (BPF_PSEUDO_BTF_ID), which package asm does not name.
const pseudoBTFID = asm.R3

// percpuKaddr loads the per-CPU variable's BTF id, which the verifier
// turns into its per-CPU address, and asks for this CPU's copy or cpu's,
// which is null for a CPU that does not exist.
func (g *gen) percpuKaddr(x *syntax.CallExpr, c *check.Call) operand {
	var cpu operand
	if len(x.Args) == 2 {
		cpu = g.scalar(x.Args[1])
		g.load(asm.R2, cpu)
		g.free(cpu)
	}
	g.emit(asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R1, Src: pseudoBTFID, Constant: int64(c.ID)})
	if len(x.Args) == 2 {
		return g.helperResult(asm.FnPerCpuPtr)
	}
	return g.helperResult(asm.FnThisCpuPtr)
}
