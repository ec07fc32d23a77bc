package codegen

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// gen generates one program.
type gen struct {
	c    *compiler
	p    *check.Probe
	mech Mechanism

	insns   asm.Instructions
	pos     []syntax.Pos
	cur     syntax.Pos        // source position of what is being generated
	curEnd  syntax.Pos        // where the expression at cur ends; NoPos when cur is no expression's
	pending string            // label for the next instruction
	aliases map[string]string // labels placed where another was pending
	nlabel  int

	stack       frame // stack memory, growing down from R10
	scratch     frame // scratch map memory, growing up from R9
	scratchBase int   // this program's offset in its scratch map (scratchMap)
	usesScratch bool

	temps   [2]bool // R7, R8 in use
	spills  []int16 // free spill slots
	vars    map[string]mem
	homes   []mem    // the variables' homes, of both halves of a kprobe session
	cookies bool     // target index comes from the attach cookie
	ids     []uint64 // what probe yields for each target
	// cookieShift is what the attach cookie, the id of a kprobe
	// session's entry target, takes to the id of its return target.
	cookieShift uint64

	exitLabel string
	loops     int // depth of while and for loops around what is generated
	// A raw_syscalls program's table of system calls (declared in the
	// collection as tableName), and where it keeps its target's id.
	table     *ebpf.MapSpec
	tableName string
	// names, once probe is read as a string in a program of several
	// targets, is the table of their names (declared as namesName).
	names     *ebpf.MapSpec
	namesName string
	idSlot    int16
	retSlot   int16 // fmod_ret, test and bench: stack slot holding the return value; 0 if none
	// cbStruct, in a loop's callback, is the slot holding the pointer to
	// the struct the caller filled; nil in the probe's own frame.
	cbStruct *mem

	// Callbacks of for ($kv : @map) loops, put after the program's exit.
	subprogs   asm.Instructions
	subpos     []syntax.Pos
	calleeDeep int    // stack the deepest chain of callbacks takes, frames rounded as the verifier does
	countCB    string // the callback of len(), once generated

	// varsInScratch: the variables live in the scratch map, a loop of
	// the probe running as a callback (see allocVars).
	varsInScratch bool
}

// A frame allocates memory for values in a stack discipline: mark
// before a statement, release after it.
type frame struct {
	used, max int
}

// mem is a place in BPF memory the program owns: the stack (base R10,
// negative offsets) or the scratch map (base R9).
type mem struct {
	base asm.Register
	off  int16
	size int
}

// at returns the memory d bytes into m.
func (m mem) at(d, size int) mem { return mem{base: m.base, off: m.off + int16(d), size: size} }

func (g *gen) emit(insns ...asm.Instruction) {
	for _, ins := range insns {
		if g.pending != "" {
			ins = ins.WithSymbol(g.pending)
			g.pending = ""
		}
		g.insns = append(g.insns, ins)
		g.pos = append(g.pos, g.cur)
		// A 64-bit immediate takes two slots; keep Pos indexed by slot.
		if ins.OpCode.IsDWordLoad() {
			g.pos = append(g.pos, g.cur)
		}
	}
}

func (g *gen) newLabel(what string) string {
	g.nlabel++
	return fmt.Sprintf("%s_%d", what, g.nlabel)
}

// place puts label l on the next instruction emitted.
func (g *gen) place(l string) {
	if g.pending != "" {
		g.aliases[l] = g.pending
		return
	}
	g.pending = l
}

// resolveAliases rewrites jumps to labels that share an instruction.
func (g *gen) resolveAliases() {
	for i := range g.insns {
		ref := g.insns[i].Reference()
		if ref == "" {
			continue
		}
		for {
			a, ok := g.aliases[ref]
			if !ok {
				break
			}
			ref = a
		}
		g.insns[i] = g.insns[i].WithReference(ref)
	}
}

// call emits a call of helper fn; with -k or -kk it also reports the
// helper's failure.
func (g *gen) call(fn asm.BuiltinFunc) {
	g.emit(fn.Call())
	g.extendMapOpResult(fn)
	// A lookup returns a pointer, not an error: its misses are reported
	// where a value is read (lookupMiss).
	if level := checkLevel(fn); level > 0 && fn != asm.FnMapLookupElem && g.c.opts.HelperChecks >= level {
		g.helperError(fn)
	}
}

// extendMapOpResult sign-extends the result of a map update or delete.
// The verifier turns those calls into direct calls of the map's
// operations, which until Linux 6.4 returned a 32-bit int: an error such
// as -E2BIG comes back with the upper half of R0 clear.
func (g *gen) extendMapOpResult(fn asm.BuiltinFunc) {
	if fn == asm.FnMapUpdateElem || fn == asm.FnMapDeleteElem {
		g.emit(asm.LSh.Imm(asm.R0, 32), asm.ArSh.Imm(asm.R0, 32))
	}
}

func (g *gen) mapPtr(dst asm.Register, name string) {
	g.emit(asm.LoadMapPtr(dst, 0).WithReference(name))
}

// movImm loads a 64-bit constant.
func (g *gen) movImm(dst asm.Register, v int64) {
	if v >= -1<<31 && v < 1<<31 {
		g.emit(asm.Mov.Imm(dst, int32(v)))
	} else {
		g.emit(asm.LoadImm(dst, v, asm.DWord))
	}
}

// alloc reserves size bytes for a value, on the stack while it has room,
// in the scratch map otherwise.
func (g *gen) alloc(size, align int) mem {
	if align > 8 {
		align = 8
	}
	if size <= maxOnStack && alignUp(g.stack.used+size, align) <= stackBudget {
		g.stack.used = alignUp(g.stack.used+size, align)
		if g.stack.used > g.stack.max {
			g.stack.max = g.stack.used
		}
		return mem{base: asm.R10, off: int16(-g.stack.used), size: size}
	}
	return g.allocScratch(size, align)
}

// allocScratch reserves size bytes in the scratch map.
func (g *gen) allocScratch(size, align int) mem {
	g.usesScratch = true
	g.scratch.used = alignUp(g.scratch.used, align)
	m := mem{base: regScratch, off: int16(g.scratch.used - g.scratchBias()), size: size}
	g.scratch.used += size
	if g.scratch.used > g.scratch.max {
		g.scratch.max = g.scratch.used
	}
	return m
}

// scratchBias is how far into the program's scratch region R9 points:
// into the middle of the larger scratch of an array slice, so that the
// instructions' signed offsets reach all of it.
func (g *gen) scratchBias() int {
	if g.c.bigScratch {
		return bigScratchBias
	}
	return 0
}

// allocStack reserves stack memory; helpers that need a small buffer
// they then read with ordinary loads use it.
func (g *gen) allocStack(size int) mem {
	g.stack.used = alignUp(g.stack.used+size, 8)
	if g.stack.used > g.stack.max {
		g.stack.max = g.stack.used
	}
	return mem{base: asm.R10, off: int16(-g.stack.used), size: size}
}

type frameMark struct{ stack, scratch int }

func (g *gen) mark() frameMark { return frameMark{g.stack.used, g.scratch.used} }

func (g *gen) release(m frameMark) {
	g.stack.used, g.scratch.used = m.stack, m.scratch
	// Spill slots in the released stack are free memory again; handing
	// them out as slots too would let a spilled temporary and a later
	// buffer share bytes.
	live := g.spills[:0]
	for _, s := range g.spills {
		if -int(s) <= m.stack {
			live = append(live, s)
		}
	}
	g.spills = live
}

// addr puts the address of m in register dst.
func (g *gen) addr(dst asm.Register, m mem) {
	g.emit(asm.Mov.Reg(dst, m.base))
	if m.off != 0 {
		g.emit(asm.Add.Imm(dst, int32(m.off)))
	}
}

// zero clears m with 8-, 4-, 2- and 1-byte stores.
func (g *gen) zero(m mem) {
	off, n := int(m.off), m.size
	for _, sz := range []struct {
		n    int
		size asm.Size
	}{{8, asm.DWord}, {4, asm.Word}, {2, asm.Half}, {1, asm.Byte}} {
		for n >= sz.n && (off%sz.n == 0 || sz.n == 1) {
			g.storeImm(m.base, int16(off), 0, sz.size)
			off += sz.n
			n -= sz.n
		}
	}
	for n > 0 { // misaligned tail
		g.storeImm(m.base, int16(off), 0, asm.Byte)
		off++
		n--
	}
}

// copyMem copies min(dst.size, src.size) bytes between memory the
// program owns and zeroes the rest of dst.
func (g *gen) copyMem(dst, src mem) {
	n := min(dst.size, src.size)
	if n > 256 {
		// Large copies are cheaper as one helper call than as hundreds
		// of loads and stores.
		g.addr(asm.R1, dst)
		g.movImm(asm.R2, int64(n))
		g.addr(asm.R3, src)
		g.call(asm.FnProbeReadKernel)
	} else {
		done := 0
		for _, sz := range []struct {
			n    int
			size asm.Size
		}{{8, asm.DWord}, {4, asm.Word}, {2, asm.Half}, {1, asm.Byte}} {
			for n-done >= sz.n && ((int(src.off)+done)%sz.n == 0 && (int(dst.off)+done)%sz.n == 0 || sz.n == 1) {
				g.emit(
					asm.LoadMem(asm.R0, src.base, src.off+int16(done), sz.size),
					asm.StoreMem(dst.base, dst.off+int16(done), asm.R0, sz.size),
				)
				done += sz.n
			}
		}
	}
	if dst.size > n {
		g.zero(dst.at(n, dst.size-n))
	}
}

// sizeOf maps a byte count to a load or store size.
func sizeOf(n int) asm.Size {
	switch n {
	case 1:
		return asm.Byte
	case 2:
		return asm.Half
	case 4:
		return asm.Word
	}
	return asm.DWord
}

// extend sign- or zero-extends the low size bytes of r to 64 bits.
func (g *gen) extend(r asm.Register, size int, signed bool) {
	if size >= 8 {
		return
	}
	shift := int32(64 - 8*size)
	if signed {
		g.emit(asm.LSh.Imm(r, shift), asm.ArSh.Imm(r, shift))
		return
	}
	if size == 4 {
		g.emit(asm.LSh.Imm(r, 32), asm.RSh.Imm(r, 32))
		return
	}
	g.emit(asm.And.Imm(r, int32(1)<<(8*size)-1))
}

// normalize re-establishes the register invariant after an operation
// that may have carried bits past the size of type t.
func (g *gen) normalize(r asm.Register, t *check.Type) {
	if t.Kind == check.Int {
		g.extend(r, t.Size, t.Signed)
	}
}

// loadInt loads an integer of type t from base+off, extended to 64 bits.
func (g *gen) loadInt(dst, base asm.Register, off int16, t *check.Type) {
	size := t.Size
	if t.Kind != check.Int {
		size = 8
	}
	g.emit(asm.LoadMem(dst, base, off, sizeOf(size)))
	if t.Kind == check.Int && t.Signed {
		g.extend(dst, size, true)
	}
}

// storeImm stores a constant. cilium's asm.StoreImm refuses 8-byte
// stores, which BPF has (the immediate is sign-extended from 32 bits),
// so those are built by hand; constants beyond 32 bits go through R0.
func (g *gen) storeImm(base asm.Register, off int16, v int64, size asm.Size) {
	switch {
	case size != asm.DWord:
		g.emit(asm.StoreImm(base, off, v, size))
	case fitsImm(v):
		g.emit(asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: base, Offset: off, Constant: v})
	default:
		g.emit(asm.LoadImm(asm.R0, v, asm.DWord), asm.StoreMem(base, off, asm.R0, asm.DWord))
	}
}
