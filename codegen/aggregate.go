package codegen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// aggregate generates @m[k] = count() and the other aggregations. Their
// maps are per-CPU, so an element is updated in place without atomics:
// only this CPU writes its copy.
func (g *gen) aggregate(x *syntax.MapExpr, call *syntax.CallExpr, c *check.Call) {
	m := g.c.maps[c.Map]
	vt := m.Value
	arg := immOp(1)
	if len(call.Args) > 0 {
		arg = g.scalar(call.Args[0])
	}
	if vt.Kind == check.TSeries {
		g.tseries(x, m, arg)
		return
	}
	k := g.key(x, m)
	switch vt.Kind {
	case check.Hist, check.Lhist:
		// The bucket index is the key's last word.
		bucket := g.bucket(arg, vt)
		last := m.Key.Offsets[len(m.Key.Offsets)-1]
		g.emit(asm.StoreMem(k.base, k.off+int16(last), g.reg(bucket, asm.R0), asm.DWord))
		g.free(bucket)
		arg = immOp(1)
	}
	// The value an absent element starts with.
	init := g.allocStack(16)
	switch vt.Kind {
	case check.Count, check.Hist, check.Lhist:
		g.storeImm(asm.R10, init.off, 1, asm.DWord)
	case check.Sum:
		g.storeOp(init.off, arg)
	case check.Min, check.Max:
		g.storeOp(init.off, arg)
		g.storeImm(asm.R10, init.off+8, 1, asm.DWord)
	case check.Avg, check.Stats:
		g.storeImm(asm.R10, init.off, 1, asm.DWord)
		g.storeOp(init.off+8, arg)
	}
	done := g.element(m, k, mem{base: asm.R10, off: init.off, size: vt.Size})
	switch vt.Kind {
	case check.Count, check.Sum, check.Hist, check.Lhist:
		g.addTo(asm.R0, 0, arg)
	case check.Avg, check.Stats:
		g.addTo(asm.R0, 0, immOp(1))
		g.addTo(asm.R0, 8, arg)
	case check.Min, check.Max:
		// Replace when this CPU has no value yet or arg is better.
		keep := g.newLabel("keep")
		store := g.newLabel("store")
		g.emit(asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord), asm.JEq.Imm(asm.R1, 0, store))
		g.emit(asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord))
		ra := g.reg(arg, asm.R2)
		// Keep the current value when it is already at least as good.
		j := asm.JLE
		switch {
		case vt.Kind == check.Min && vt.Signed:
			j = asm.JSLE
		case vt.Kind == check.Max && vt.Signed:
			j = asm.JSGE
		case vt.Kind == check.Max:
			j = asm.JGE
		}
		g.emit(j.Reg(asm.R1, ra, keep))
		g.place(store)
		ra = g.reg(arg, asm.R2)
		g.emit(asm.StoreMem(asm.R0, 0, ra, asm.DWord))
		g.storeImm(asm.R0, 8, 1, asm.DWord)
		g.place(keep)
	}
	g.place(done)
	g.free(arg)
}

// tseries generates @m[k] = tseries(v, interval, n[, agg]). The
// interval number, the TAI time over the interval, picks the bucket,
// its remainder by n, stored as the key's last word; the bucket keeps
// the number beside its value, so that a part left from an interval n
// intervals before starts over, and reading drops what has gone stale.
// The TAI clock is what bpftrace's tseries reads, so intervals start
// on wall-clock boundaries.
func (g *gen) tseries(x *syntax.MapExpr, m *Map, arg operand) {
	vt := m.Value
	var now operand
	if name := g.c.opts.TSeriesClock; name != "" {
		now = g.mapReadScalar(&syntax.MapExpr{Name: strings.TrimPrefix(name, "@")})
	} else {
		now = g.helperResult(asm.FnKtimeGetTaiNs)
	}
	g.load(asm.R1, now)
	g.movImm(asm.R2, vt.TSInterval)
	g.emit(asm.Div.Reg(asm.R1, asm.R2))
	epoch := g.fromReg(asm.R1)
	k := g.key(x, m)
	g.load(asm.R1, epoch)
	g.movImm(asm.R2, vt.TSIntervals)
	g.emit(asm.Mod.Reg(asm.R1, asm.R2))
	last := m.Key.Offsets[len(m.Key.Offsets)-1]
	g.emit(asm.StoreMem(k.base, k.off+int16(last), asm.R1, asm.DWord))

	// The bucket an absent element starts as: value, meta, interval.
	init := g.allocStack(24)
	g.storeOp(init.off, arg)
	switch vt.TSAgg {
	case "":
		g.storeOp(init.off+8, now)
	case "sum":
		g.storeImm(asm.R10, init.off+8, 0, asm.DWord)
	default: // avg counts, min and max mark the value set
		g.storeImm(asm.R10, init.off+8, 1, asm.DWord)
	}
	g.storeOp(init.off+16, epoch)
	done := g.element(m, k, mem{base: asm.R10, off: init.off, size: vt.Size})
	if vt.TSAgg != "" {
		// A part of an older interval starts over.
		same := g.newLabel("sameinterval")
		g.emit(asm.LoadMem(asm.R1, asm.R0, 16, asm.DWord))
		g.emit(asm.JEq.Reg(asm.R1, g.reg(epoch, asm.R2), same))
		g.storeImm(asm.R0, 0, 0, asm.DWord)
		g.storeImm(asm.R0, 8, 0, asm.DWord)
		g.place(same)
	}
	switch vt.TSAgg {
	case "":
		g.emit(asm.StoreMem(asm.R0, 0, g.reg(arg, asm.R2), asm.DWord))
		g.emit(asm.StoreMem(asm.R0, 8, g.reg(now, asm.R2), asm.DWord))
	case "sum":
		g.addTo(asm.R0, 0, arg)
	case "avg":
		g.addTo(asm.R0, 0, arg)
		g.addTo(asm.R0, 8, immOp(1))
	case "min", "max":
		// Replace when the part has no value yet or arg is better.
		keep, store := g.newLabel("keep"), g.newLabel("store")
		g.emit(asm.LoadMem(asm.R1, asm.R0, 8, asm.DWord), asm.JEq.Imm(asm.R1, 0, store))
		g.emit(asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord))
		j := map[[2]bool]asm.JumpOp{{false, false}: asm.JLE, {false, true}: asm.JSLE, {true, false}: asm.JGE, {true, true}: asm.JSGE}[[2]bool{vt.TSAgg == "max", vt.Signed}]
		g.emit(j.Reg(asm.R1, g.reg(arg, asm.R2), keep))
		g.place(store)
		g.emit(asm.StoreMem(asm.R0, 0, g.reg(arg, asm.R2), asm.DWord))
		g.storeImm(asm.R0, 8, 1, asm.DWord)
		g.place(keep)
	}
	g.emit(asm.StoreMem(asm.R0, 16, g.reg(epoch, asm.R2), asm.DWord))
	g.place(done)
	g.free(epoch)
	g.free(now)
	g.free(arg)
}

// checkTSeriesClock checks Options.TSeriesClock, when set and a map
// holds tseries() values: the map must exist, without keys, and hold an
// unsigned integer.
func (c *compiler) checkTSeriesClock() error {
	name := c.opts.TSeriesClock
	if name == "" || !slices.ContainsFunc(c.prog.Maps, func(m *check.Map) bool { return m.Value.Kind == check.TSeries }) {
		return nil
	}
	m := c.prog.Map(strings.TrimPrefix(name, "@"))
	if m == nil || m.Keys != nil || m.Value.Kind != check.Int || m.Value.Signed {
		return fmt.Errorf("tseries clock %s: want a map without keys holding an unsigned integer", name)
	}
	return nil
}

// storeOp stores an operand into the stack at off.
func (g *gen) storeOp(off int16, op operand) {
	if op.kind == opImm && fitsImm(op.imm) {
		g.storeImm(asm.R10, off, op.imm, asm.DWord)
		return
	}
	g.emit(asm.StoreMem(asm.R10, off, g.reg(op, asm.R1), asm.DWord))
}

// addTo adds op to the word at base+off.
func (g *gen) addTo(base asm.Register, off int16, op operand) {
	g.emit(asm.LoadMem(asm.R1, base, off, asm.DWord))
	if op.kind == opImm && fitsImm(op.imm) {
		g.emit(asm.Add.Imm(asm.R1, int32(op.imm)))
	} else {
		g.emit(asm.Add.Reg(asm.R1, g.reg(op, asm.R2)))
	}
	g.emit(asm.StoreMem(base, off, asm.R1, asm.DWord))
}

// bucket computes the hist or lhist bucket index of v.
//
// hist: 0 for negative values, 1+v below 2^bits, and 2^bits buckets
// for each power of two above, as bpftrace 0.26 counts them: with bits
// 0, 1 for zero and 2+floor(log2(v)) for the rest.
// lhist: 0 below min, 1+(v-min)/step within [min, max), and one past the
// last bucket from max up.
func (g *gen) bucket(v operand, t *check.Type) operand {
	b := g.newTemp()
	r := g.work(b, asm.R1)
	g.load(r, v)
	done := g.newLabel("bucket")
	if t.Kind == check.Lhist {
		last := (t.LhistMax-t.LhistMin)/t.LhistStep + 1
		inRange := g.newLabel("inrange")
		g.movImm(asm.R2, t.LhistMin)
		g.emit(asm.JSGE.Reg(r, asm.R2, inRange), asm.Mov.Imm(r, 0), asm.Ja.Label(done))
		g.place(inRange)
		below := g.newLabel("belowmax")
		g.movImm(asm.R2, t.LhistMax)
		g.emit(asm.JSLT.Reg(r, asm.R2, below))
		g.movImm(r, last)
		g.emit(asm.Ja.Label(done))
		g.place(below)
		g.movImm(asm.R2, t.LhistMin)
		g.emit(asm.Sub.Reg(r, asm.R2))
		g.movImm(asm.R2, t.LhistStep)
		g.emit(asm.Div.Reg(r, asm.R2), asm.Add.Imm(r, 1))
	} else {
		// Values below 2^bits have a bucket each, the rest split each
		// power of two into 2^bits buckets by the bits after the
		// leading one.
		mask := int32(1)<<t.HistBits - 1
		nonNegative, large := g.newLabel("nonnegative"), g.newLabel("large")
		g.emit(asm.JSGE.Imm(r, 0, nonNegative), asm.Mov.Imm(r, 0), asm.Ja.Label(done))
		g.place(nonNegative)
		g.emit(asm.JGT.Imm(r, mask, large), asm.Add.Imm(r, 1), asm.Ja.Label(done))
		g.place(large)
		// R2 = floor(log2(v)), by halving the search range: 32, 16,
		// 8, 4, 2, 1.
		g.emit(asm.Mov.Imm(asm.R2, 0), asm.Mov.Reg(asm.R4, r))
		for _, shift := range []int32{32, 16, 8, 4, 2, 1} {
			skip := g.newLabel("log2")
			g.emit(asm.Mov.Reg(asm.R3, asm.R4), asm.RSh.Imm(asm.R3, shift), asm.JEq.Imm(asm.R3, 0, skip))
			g.emit(asm.Mov.Reg(asm.R4, asm.R3), asm.Add.Imm(asm.R2, shift))
			g.place(skip)
		}
		// The bucket is 1 + ((log2 - bits + 1) << bits) + the bits
		// after the leading one.
		g.emit(asm.Sub.Imm(asm.R2, int32(t.HistBits)))
		g.emit(asm.RSh.Reg(r, asm.R2), asm.And.Imm(r, mask))
		g.emit(asm.Add.Imm(asm.R2, 1), asm.LSh.Imm(asm.R2, int32(t.HistBits)))
		g.emit(asm.Add.Reg(r, asm.R2), asm.Add.Imm(r, 1))
	}
	g.place(done)
	g.set(b, r)
	return b
}

// element leaves in R0 this CPU's element of m at key k, created from
// init when absent, and returns the label to place after the element is
// updated: a new element, which init already holds, or a full map jumps
// there.
func (g *gen) element(m *Map, k, init mem) (done string) {
	have, done := g.newLabel("have"), g.newLabel("aggregated")
	g.lookup(m, k)
	g.emit(asm.JNE.Imm(asm.R0, 0, have))
	g.update(m, k, init, updateNoExist)
	g.emit(asm.JEq.Imm(asm.R0, 0, done))
	// Another CPU created the element first: update the copy it made
	// for this CPU.
	g.lookup(m, k)
	g.emit(asm.JEq.Imm(asm.R0, 0, done))
	g.place(have)
	return done
}
