package codegen

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
)

// watchArgs is the record of a watch or unwatch action: the address.
var watchArgs = check.TupleType([]*check.Type{check.TUint64})

// compileWatchSetups adds, for each target of main that watches a
// function's argument, the uprobe program that sets the watchpoint up.
func (c *compiler) compileWatchSetups(main *Program) {
	for _, t := range main.Targets {
		if t.Watch != nil {
			c.out.Programs = append(c.out.Programs, c.watchSetup(main, t))
		}
	}
}

// watchSetup generates the program at a watched function's entry: it
// stops the process unless the watchpoint is asynchronous, and sends
// the argument's value to user space, which sets the watchpoint and
// lets the process go on, as bpftrace does. Its target is not one of
// Output.Targets: it is how a probe attaches, not a probe.
func (c *compiler) watchSetup(main *Program, t *check.Target) *Program {
	g := &gen{c: c, p: main.Probe, mech: MechUprobe, vars: map[string]mem{}, aliases: map[string]string{}}
	g.cur = main.Probe.Syntax.Pos()
	g.exitLabel = g.newLabel("exit")
	if !t.Watch.Async {
		g.emit(asm.Mov.Imm(asm.R1, int32(unix.SIGSTOP)))
		g.call(asm.FnSendSignal)
	}
	a := g.action(&Action{Kind: ActWatch, Args: watchArgs, Target: t, Program: main})
	rec := g.record(a)
	g.emit(asm.LoadMem(asm.R0, regCtx, argRegs[t.Watch.Arg], asm.DWord))
	body := rec.at(headerSize, 8)
	g.emit(asm.StoreMem(body.base, body.off, asm.R0, asm.DWord))
	g.emitRecord(rec)
	if !t.Watch.Async {
		// A record the ring buffer refused never reaches user space,
		// which would let the process go on: it goes on now.
		g.emit(asm.JEq.Imm(asm.R0, 0, g.exitLabel), asm.Mov.Imm(asm.R1, int32(unix.SIGCONT)))
		g.call(asm.FnSendSignal)
	}
	g.place(g.exitLabel)
	g.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	g.prologue()
	g.resolveAliases()
	c.nprogs++
	name := fmt.Sprintf("probe%d", c.nprogs)
	ptype, atype := programType(MechUprobe, false)
	c.out.Collection.Programs[name] = &ebpf.ProgramSpec{
		Name:         mapName("", fmt.Sprintf("p%d_watch", c.nprogs)),
		Type:         ptype,
		AttachType:   atype,
		License:      "GPL",
		Instructions: g.insns,
	}
	return &Program{
		Name:      name,
		Probe:     main.Probe,
		Targets:   []*check.Target{t.Watch.Entry},
		IDs:       []uint64{0},
		Mechanism: MechUprobe,
		Why:       "a watchpoint on a function's argument is set when a uprobe at the function's entry reads it",
		Pos:       g.pos,
	}
}
