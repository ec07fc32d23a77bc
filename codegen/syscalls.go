package codegen

import (
	"encoding/binary"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/kernel"
)

// familyMin is how many syscalls tracepoints of one direction a probe
// must name, at least, to attach them all as one program on raw_syscalls.
// Closing the perf event of each tracepoint costs the kernel an RCU grace
// period, and the closes are serialized: about 21 ms each on a 6.18
// host, 125 ms for 6 and 8.6 s for all 360, against 25 ms for the one
// raw_syscalls event. That program, though, runs on every system call
// of the machine, the ones not traced too, and adds about 0.15 µs to
// each over what the syscalls tracepoints' perf handler costs them. At
// 8 tracepoints the 150 ms saved pay for a million system calls and
// more, seconds to minutes of a machine's run; under that, the perf
// events are the cheaper choice for all but short runs.
const familyMin = 8

// syscallOf reports whether t is a syscalls tracepoint whose system call
// kinst knows the number of, and which of raw_syscalls's tracepoints,
// sys_enter or sys_exit, fires with the same record for it.
func syscallOf(t *check.Target) (dir string, nr int, ok bool) {
	cat, name, _ := strings.Cut(t.Name, ":")
	if t.Provider != "tracepoint" || cat != "syscalls" {
		return "", 0, false
	}
	for _, dir := range []string{"sys_enter", "sys_exit"} {
		if call, found := strings.CutPrefix(name, dir+"_"); found {
			nr, ok := kernel.SyscallNumber(call)
			return dir, nr, ok
		}
	}
	return "", 0, false
}

// splitSyscalls puts a tracepoint probe's syscalls tracepoints of one
// direction into a probe of their own where there are familyMin of them
// or more, to run as one raw_syscalls program; the other targets stay
// together, in their order.
func (c *compiler) splitSyscalls(p *check.Probe) []*check.Probe {
	if p.Provider != "tracepoint" {
		return []*check.Probe{p}
	}
	byDir := map[string][]*check.Target{}
	family := false
	for _, t := range p.Targets {
		if dir, _, ok := syscallOf(t); ok {
			byDir[dir] = append(byDir[dir], t)
			family = family || len(byDir[dir]) >= familyMin
		}
	}
	// Only a family needs the kernel's BTF, which costs megabytes to read.
	if !family || !c.compatKnown() {
		return []*check.Probe{p}
	}
	var parts []*check.Probe
	var rest []*check.Target
	for _, t := range p.Targets {
		dir, _, ok := syscallOf(t)
		switch {
		case !ok || len(byDir[dir]) < familyMin:
			rest = append(rest, t)
		case byDir[dir][0] == t:
			part := *p
			part.Targets = byDir[dir]
			parts = append(parts, &part)
		}
	}
	if len(parts) == 0 {
		return []*check.Probe{p}
	}
	if len(rest) > 0 {
		part := *p
		part.Targets = rest
		parts = append(parts, &part)
	}
	return parts
}

// syscallFamily reports whether targets are familyMin syscalls
// tracepoints or more of one direction, all with known numbers, and
// names the raw_syscalls tracepoint that serves them.
func (c *compiler) syscallFamily(targets []*check.Target) (string, bool) {
	if len(targets) < familyMin || !c.compatKnown() {
		return "", false
	}
	first, _, ok := syscallOf(targets[0])
	for _, t := range targets[1:] {
		dir, _, known := syscallOf(t)
		ok = ok && known && dir == first
	}
	return first, ok
}

// compatKnown reports whether the kernel says where a task marks a 32-bit
// system call, which a raw_syscalls program must skip.
func (c *compiler) compatKnown() bool {
	if !c.compatAsked {
		c.compatAsked = true
		c.compatOff = -1
		if c.opts.CompatStatus != nil {
			if off, err := c.opts.CompatStatus(); err == nil {
				c.compatOff = off
			}
		}
	}
	return c.compatOff >= 0
}

// syscallTable is the table of a raw_syscalls program, one word per
// system call number: 1 + the id of its target, and 0 for the calls the
// probe does not name. It is the value of a single-entry array, which
// the program reads by address without a helper call, and which an ELF
// object writes as a data section.
func syscallTable(name string, targets []*check.Target, ids []uint64) *ebpf.MapSpec {
	nrs := make([]int, len(targets))
	size := 0
	for i, t := range targets {
		_, nrs[i], _ = syscallOf(t)
		size = max(size, nrs[i]+1)
	}
	table := make([]byte, 4*size)
	for i, nr := range nrs {
		binary.NativeEndian.PutUint32(table[4*nr:], uint32(ids[i]+1))
	}
	return &ebpf.MapSpec{
		Name:       mapName("", name),
		Type:       ebpf.Array,
		KeySize:    4,
		ValueSize:  uint32(len(table)),
		MaxEntries: 1,
		Contents:   []ebpf.MapKV{{Key: uint32(0), Value: table}},
	}
}

// syscallFilter begins a raw_syscalls program: it returns at once for a
// system call the probe does not name, and for a 32-bit one, which
// raw_syscalls reports under its 32-bit number while syscalls
// tracepoints stay silent; it keeps the target's id in g.idSlot.
func (g *gen) syscallFilter() {
	tmp := g.allocStack(4)
	g.emit(
		// The record's id, a long at 8 in raw_syscalls's sys_enter and
		// sys_exit alike.
		asm.LoadMem(asm.R1, regCtx, 8, asm.DWord),
		asm.JGE.Imm(asm.R1, int32(g.table.ValueSize/4), g.exitLabel),
		asm.LSh.Imm(asm.R1, 2),
		asm.LoadMapValue(asm.R0, 0, 0).WithReference(g.tableName),
		asm.Add.Reg(asm.R0, asm.R1),
		asm.LoadMem(asm.R0, asm.R0, 0, asm.Word),
		asm.JEq.Imm(asm.R0, 0, g.exitLabel),
		asm.Add.Imm(asm.R0, -1),
		asm.StoreMem(asm.R10, g.idSlot, asm.R0, asm.DWord),
		asm.FnGetCurrentTask.Call(),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, int32(g.c.compatOff)),
	)
	g.addr(asm.R1, tmp)
	g.emit(
		asm.Mov.Imm(asm.R2, 4),
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R0, asm.R10, tmp.off, asm.Word),
		asm.JSet.Imm(asm.R0, kernel.TSCompat, g.exitLabel),
	)
}
