package codegen

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

// Flags of bpf_map_update_elem.
const (
	updateAny     = 0 // BPF_ANY
	updateNoExist = 1 // BPF_NOEXIST
)

func (g *gen) mapOf(x *syntax.MapExpr) *Map {
	return g.c.maps[g.c.prog.Map(x.Name)]
}

// key builds the stored key of map element x. For hist and lhist maps the
// bucket index goes in the last word, which the caller fills.
func (g *gen) key(x *syntax.MapExpr, m *Map) mem {
	k := g.alloc(m.Key.Size, 8)
	if x.Keys == nil {
		g.storeImm(k.base, k.off, 0, asm.DWord)
		return k
	}
	if hasPadding(m.Key) {
		g.zero(k)
	}
	if kt := g.typeOf(x.Keys[0]); len(x.Keys) == 1 && kt.Kind == check.Tuple && !kt.IsRecord() {
		// A tuple is the keys it holds; a hist's bucket word follows.
		kt := check.TupleType(m.Keys)
		g.memInto(x.Keys[0], k.at(0, kt.Size), kt)
		return k
	}
	for i, kx := range x.Keys {
		kt := m.Key.Elems[i]
		g.storeValue(kx, k.at(m.Key.Offsets[i], kt.Size), kt)
	}
	return k
}

// lookup calls bpf_map_lookup_elem; R0 holds the value pointer or null.
func (g *gen) lookup(m *Map, key mem) {
	g.mapPtr(asm.R1, m.Spec)
	g.addr(asm.R2, key)
	g.call(asm.FnMapLookupElem)
}

// update calls bpf_map_update_elem.
func (g *gen) update(m *Map, key, value mem, flags int32) {
	g.mapPtr(asm.R1, m.Spec)
	g.addr(asm.R2, key)
	g.addr(asm.R3, value)
	g.emit(asm.Mov.Imm(asm.R4, flags))
	g.emit(asm.FnMapUpdateElem.Call())
	g.extendMapOpResult(asm.FnMapUpdateElem)
	// A full map refuses new elements with E2BIG: counted per map, with
	// an atomic add user space reads through a memory mapping.
	counted := g.newLabel("notfull")
	g.emit(
		asm.JNE.Imm(asm.R0, -int32(unix.E2BIG), counted),
		asm.LoadMapValue(asm.R1, 0, uint32(FullOffset(m))).WithReference(LostMap),
		asm.Mov.Imm(asm.R2, 1),
		asm.StoreXAdd(asm.R1, asm.R2, asm.DWord),
	)
	g.place(counted)
	// Creating an element another CPU may have created first fails
	// with EEXIST, which is expected, not worth a -k warning.
	if flags != updateNoExist && g.c.opts.HelperChecks >= checkLevel(asm.FnMapUpdateElem) {
		g.helperError(asm.FnMapUpdateElem)
	}
}

// mapReadScalar reads an integer element, 0 when absent. An element of
// count(), sum(), min(), max() or avg() reads as bpftrace 0.26 reads one:
// its value over all CPUs.
func (g *gen) mapReadScalar(x *syntax.MapExpr) operand {
	m := g.mapOf(x)
	k := g.key(x, m)
	if m.Value.IsAggregation() {
		v := g.allocStack(8)
		g.totalCPUs(x, m, k, v)
		g.emit(asm.LoadMem(asm.R0, v.base, v.off, asm.DWord))
		return g.fromReg(asm.R0)
	}
	g.lookup(m, k)
	g.lookupMiss()
	done := g.newLabel("mapval")
	g.emit(asm.JEq.Imm(asm.R0, 0, done))
	g.loadInt(asm.R0, asm.R0, 0, m.Value)
	g.place(done)
	return g.fromReg(asm.R0)
}

// lookupMiss reports a map read whose key is absent, as both releases
// do at their highest warning level (-kk in 0.17, -k in 0.26.1): a
// helper error of map_lookup_elem with code 0. R0, the lookup's result,
// is left as it was.
func (g *gen) lookupMiss() {
	if g.c.opts.HelperChecks < checkLevel(asm.FnMapLookupElem) {
		return
	}
	mark := g.mark()
	defer g.release(mark)
	found := g.newLabel("found")
	g.emit(asm.JNE.Imm(asm.R0, 0, found))
	a := g.action(&Action{Kind: ActHelperError, Text: helperName(asm.FnMapLookupElem), Args: helperErrorArgs, End: g.curEnd})
	rec := g.record(a)
	g.storeImm(rec.base, rec.off+headerSize, 0, asm.DWord)
	g.emitRecord(rec)
	g.emit(asm.Mov.Imm(asm.R0, 0))
	g.place(found)
}

// mapReadMem copies a string or tuple element into dst, zeroes when
// absent.
func (g *gen) mapReadMem(x *syntax.MapExpr, dst mem, t *check.Type) {
	m := g.mapOf(x)
	k := g.key(x, m)
	g.lookup(m, k)
	g.lookupMiss()
	missing, done := g.newLabel("nokey"), g.newLabel("mapval")
	g.emit(asm.JEq.Imm(asm.R0, 0, missing), asm.Mov.Reg(asm.R3, asm.R0))
	g.convertMem(dst, t, mem{base: asm.R3, size: m.Value.Size}, m.Value)
	g.emit(asm.Ja.Label(done))
	g.place(missing)
	g.zero(dst)
	g.place(done)
}

func (g *gen) assignMap(x *syntax.MapExpr, s *syntax.AssignStmt) {
	m := g.mapOf(x)
	// A failed update names the whole statement.
	defer func(end syntax.Pos) { g.curEnd = end }(g.curEnd)
	g.curEnd = s.End()
	if s.Op == syntax.ASSIGN {
		v := g.alloc(m.Value.Size, m.Value.Align())
		g.storeValue(s.Rhs, v, m.Value)
		k := g.key(x, m)
		if g.c.prog.Compat == compat.V017 {
			// 0.17 locates the update at its '='.
			g.cur = s.OpPos
		}
		g.update(m, k, v, updateAny)
		return
	}
	op := s.Op.BinaryOf()
	rhs := g.scalar(s.Rhs)
	if m.Value.Kind == check.Ptr {
		rhs = g.scale(g.owned(rhs), m.Value)
	}
	g.modify(x, m, op, rhs, g.typeOf(s.Rhs), noResult)
}

// want says which value a read-modify-write returns.
type want int

const (
	noResult want = iota
	oldValue      // x++
	newValue      // ++x
)

// incDec generates ++ and --; value says whether the expression's value
// is used, which rules out the atomic fast path.
func (g *gen) incDec(x *syntax.IncDecExpr, value bool) operand {
	op := syntax.ADD
	if x.Op == syntax.DEC {
		op = syntax.SUB
	}
	switch target := x.X.(type) {
	case *syntax.VarExpr:
		v := g.vars[target.Name]
		t := g.p.Vars[target.Name].Type
		old := g.newTemp()
		r := g.work(old, asm.R1)
		g.emit(asm.LoadMem(r, v.base, v.off, asm.DWord))
		g.set(old, r)
		g.emit(asm.Mov.Reg(asm.R2, r))
		g.emit(aluOp(op, false).Imm(asm.R2, int32(step(t))))
		g.normalize(asm.R2, t)
		g.emit(asm.StoreMem(v.base, v.off, asm.R2, asm.DWord))
		if x.Prefix {
			g.set(old, asm.R2)
		}
		return old
	case *syntax.MapExpr:
		w := noResult
		switch {
		case value && x.Prefix:
			w = newValue
		case value:
			w = oldValue
		}
		m := g.mapOf(target)
		return g.modify(target, m, op, immOp(int64(step(m.Value))), check.TInt64, w)
	}
	return immOp(0)
}

// step is what ++ adds to a value of type t: 1, or for a pointer the
// size of what it points to.
func step(t *check.Type) int {
	if t.Kind == check.Ptr {
		return check.ElemSize(t)
	}
	return 1
}

// modify applies op= rhs to a map element, creating it from zero when
// absent. Without a result wanted, + and - use an atomic add so that
// concurrent updates from several CPUs are not lost. With one, the old
// value (or the new one, for prefix) is returned.
func (g *gen) modify(x *syntax.MapExpr, m *Map, op syntax.Token, rhs operand, rt *check.Type, w want) operand {
	vt := m.Value
	k := g.key(x, m)
	g.lookup(m, k)
	create, done := g.newLabel("create"), g.newLabel("modified")
	g.emit(asm.JEq.Imm(asm.R0, 0, create))
	result := immOp(0)
	if w != noResult {
		result = g.newTemp()
	}
	atomic := w == noResult && (op == syntax.ADD || op == syntax.SUB) && vt.Size == 8
	if atomic {
		g.load(asm.R1, rhs)
		if op == syntax.SUB {
			g.emit(asm.Neg.Imm(asm.R1, 0))
		}
		g.emit(asm.StoreXAdd(asm.R0, asm.R1, asm.DWord))
	} else {
		g.emit(asm.Mov.Reg(asm.R3, asm.R0))
		g.loadInt(asm.R1, asm.R3, 0, vt)
		if w == oldValue {
			g.set(result, asm.R1)
		}
		g.applyOp(op, rhs, vt, rt)
		g.emit(asm.StoreMem(asm.R3, 0, asm.R1, sizeOf(vt.Size)))
		if w == newValue {
			g.set(result, asm.R1)
		}
	}
	g.emit(asm.Ja.Label(done))
	// Absent: the element starts from zero.
	g.place(create)
	g.emit(asm.Mov.Imm(asm.R1, 0))
	if w == oldValue {
		g.set(result, asm.R1)
	}
	g.emit(asm.Mov.Imm(asm.R3, 0)) // applyOp may divide: keep R3 defined
	g.applyOp(op, rhs, vt, rt)
	if w == newValue {
		g.set(result, asm.R1)
	}
	v := g.allocStack(8)
	g.emit(asm.StoreMem(asm.R10, v.off, asm.R1, asm.DWord))
	g.update(m, k, mem{base: asm.R10, off: v.off, size: vt.Size}, updateAny)
	g.place(done)
	g.free(rhs)
	return result
}

// applyOp computes R1 = R1 op rhs for a value of type vt, normalized.
func (g *gen) applyOp(op syntax.Token, rhs operand, vt, rt *check.Type) {
	signed := vt.Signed && rt.Signed
	if signed && (op == syntax.QUO || op == syntax.REM) {
		g.emit(asm.Mov.Reg(asm.R4, asm.R3))
		g.load(asm.R2, rhs)
		g.signedDiv(op, asm.R1)
		g.emit(asm.Mov.Reg(asm.R3, asm.R4))
	} else if rhs.kind == opImm && fitsImm(rhs.imm) {
		g.emit(aluOp(op, signed).Imm(asm.R1, int32(rhs.imm)))
	} else {
		g.emit(aluOp(op, signed).Reg(asm.R1, g.reg(rhs, asm.R2)))
	}
	g.normalize(asm.R1, vt)
}

// deleteElem removes a map element; R0 is 0 when there was one, else
// a negative error.
func (g *gen) deleteElem(x *syntax.MapExpr) {
	m := g.mapOf(x)
	k := g.key(x, m)
	g.mapPtr(asm.R1, m.Spec)
	g.addr(asm.R2, k)
	g.call(asm.FnMapDeleteElem)
}

// deleted removes map elements, yielding 1 when each was there, else 0.
func (g *gen) deleted(elems []*syntax.MapExpr) operand {
	all := g.owned(immOp(1))
	for _, e := range elems {
		g.deleteElem(e)
		// The sign bit of the result is set on failure.
		g.emit(asm.RSh.Imm(asm.R0, 63), asm.Xor.Imm(asm.R0, 1))
		r := g.work(all, asm.R1)
		g.emit(asm.And.Reg(r, asm.R0))
		g.set(all, r)
	}
	return all
}

// hasKey yields 1 when map element x exists, else 0.
func (g *gen) hasKey(x *syntax.MapExpr) operand {
	m := g.mapOf(x)
	g.lookup(m, g.key(x, m))
	done := g.newLabel("haskey")
	g.emit(asm.JEq.Imm(asm.R0, 0, done), asm.Mov.Imm(asm.R0, 1))
	g.place(done)
	return g.fromReg(asm.R0)
}

// mapLen counts the elements of map cm: bpf_for_each_map_elem returns
// how many elements it visited, and its callback here only goes on.
func (g *gen) mapLen(cm *check.Map) operand {
	m := g.c.maps[cm]
	if g.countCB == "" {
		g.countCB = g.newLabel("count")
		insn := btf.WithFuncMetadata(asm.Mov.Imm(asm.R0, 0).WithSymbol(g.countCB), btfFunc(g.countCB, 4))
		g.subprogs = append(g.subprogs, insn, asm.Return())
		g.subpos = append(g.subpos, g.cur, g.cur)
	}
	g.mapPtr(asm.R1, m.Spec)
	g.emit(asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(g.countCB))
	g.emit(asm.Mov.Imm(asm.R3, 0), asm.Mov.Imm(asm.R4, 0))
	g.call(asm.FnForEachMapElem)
	return g.fromReg(asm.R0)
}
