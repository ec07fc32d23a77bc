package codegen

import (
	"fmt"
	"slices"

	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/usdt"
)

// splitUSDT gives each group of a USDT probe's sites whose arguments
// live in the same places a probe of its own, so that arg0..argN compile
// to plain register, constant and memory reads: sites of one probe name
// may keep an argument in different registers. A probe that reads no
// argument stays whole.
func splitUSDT(probes []*check.Probe) []*check.Probe {
	var out []*check.Probe
	for _, p := range probes {
		if p.Provider != "usdt" || len(p.Targets) < 2 || !readsArgs(p) {
			out = append(out, p)
			continue
		}
		var groups [][]*check.Target
	next:
		for _, t := range p.Targets {
			for i, g := range groups {
				if slices.Equal(g[0].USDT, t.USDT) {
					groups[i] = append(g, t)
					continue next
				}
			}
			groups = append(groups, []*check.Target{t})
		}
		for _, g := range groups {
			one := *p
			one.Targets = g
			out = append(out, &one)
		}
	}
	return out
}

func readsArgs(p *check.Probe) bool {
	for name := range p.Uses {
		if _, ok := argIndex(name); ok {
			return true
		}
	}
	return false
}

// usdtArg reads a USDT argument where its operand says, extended to 64
// bits from the operand's width as its sign says.
func (g *gen) usdtArg(a usdt.Arg) operand {
	switch a.Kind {
	case usdt.Const:
		v := a.Value
		if a.Size < 8 {
			shift := 64 - 8*a.Size
			if a.Signed {
				v = v << shift >> shift
			} else {
				v = int64(uint64(v) << shift >> shift)
			}
		}
		return immOp(v)
	case usdt.Reg:
		op := g.ctxWord(g.regOffset(a.Reg))
		r := g.work(op, asm.R0)
		if a.Shift != 0 {
			g.emit(asm.RSh.Imm(r, int32(a.Shift)))
		}
		g.extend(r, min(a.Size, a.RegSize), a.Signed)
		g.set(op, r)
		return op
	}
	// Memory: compute the address, then copy the value out of the
	// process's memory onto the stack. The result's temporary comes
	// first: it may be a stack slot, which must outlive the copy's.
	t := g.newTemp()
	mark := g.mark()
	defer g.release(mark)
	slot := g.allocStack(8)
	if a.Reg != "" {
		g.emit(asm.LoadMem(asm.R3, regCtx, g.regOffset(a.Reg), asm.DWord))
	} else {
		g.emit(asm.Mov.Imm(asm.R3, 0))
	}
	if a.Index != "" {
		g.emit(asm.LoadMem(asm.R2, regCtx, g.regOffset(a.Index), asm.DWord))
		if a.Scale > 1 {
			g.emit(asm.Mul.Imm(asm.R2, int32(a.Scale)))
		}
		g.emit(asm.Add.Reg(asm.R3, asm.R2))
	}
	if a.Value != 0 {
		g.movImm(asm.R2, a.Value)
		g.emit(asm.Add.Reg(asm.R3, asm.R2))
	}
	g.addr(asm.R1, slot)
	g.emit(asm.Mov.Imm(asm.R2, int32(a.Size)))
	g.call(asm.FnProbeReadUser)
	r := g.work(t, asm.R0)
	g.loadInt(r, asm.R10, slot.off, check.IntType(a.Size, a.Signed))
	g.set(t, r)
	return t
}

// regOffset is where struct pt_regs saves a register usdt names.
func (g *gen) regOffset(name string) int16 {
	off, ok := check.RegisterOffset(name)
	if !ok {
		panic(fmt.Sprintf("usdt register %q has no pt_regs slot", name))
	}
	return int16(off)
}
