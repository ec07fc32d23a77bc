package codegen

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/kernel"
)

// pairSessions finds, in bpftrace 0.26.1's mode, the kprobes that run as
// a kprobe session with a kretprobe: one program, attached by one
// kprobe.multi link in session mode, runs the kprobe's block when the
// functions are entered and the kretprobe's when they return, as
// bpftrace 0.26.1 joins them where the kernel has session links (6.10).
// A kprobe of one attach point pairs with the one kretprobe of one
// attach point that names the same functions, when both could attach
// through kprobe.multi and neither names the probe it runs in (which
// bpftrace expands a probe for). It returns probes without the paired
// kretprobes, each pair in its kprobe's place, and records the pairs in
// c.sessions.
func (c *compiler) pairSessions(probes []*check.Probe) []*check.Probe {
	if c.prog.Compat == compat.V017 || c.opts.Force != "" {
		return probes
	}
	paired := map[*check.Probe]bool{}
	for _, p := range probes {
		if p.Provider != "kprobe" || !sessionHalf(p) {
			continue
		}
		var match []*check.Probe
		for _, r := range probes {
			if r.Provider == "kretprobe" && !paired[r] && sessionHalf(r) && sameFunctions(p, r) {
				match = append(match, r)
			}
		}
		// The kernel is asked only when there is a pair to make.
		if len(match) != 1 || !c.supports(MechKprobeMulti) || !c.supports(MechKprobeSession) {
			continue
		}
		if c.sessions == nil {
			c.sessions = map[*check.Probe]*check.Probe{}
		}
		c.sessions[p] = match[0]
		paired[match[0]] = true
	}
	if len(paired) == 0 {
		return probes
	}
	var out []*check.Probe
	for _, p := range probes {
		if !paired[p] {
			out = append(out, p)
		}
	}
	return out
}

// sessionHalf reports whether a kprobe or kretprobe may be half of a
// kprobe session: one attach point without a module, functions that
// kprobe.multi reaches at their entry, a body that reads no saved
// registers (its own kprobe's) and does not name its probe.
func sessionHalf(p *check.Probe) bool {
	if len(p.Syntax.Points) != 1 || len(p.Syntax.Points[0].Parts) != 1 || len(p.Targets) == 0 ||
		usesRegisters(p) || p.Uses["probe"] {
		return false
	}
	for _, t := range p.Targets {
		if hasOffset(t) || t.NoFtrace {
			return false
		}
	}
	return true
}

// sameFunctions reports whether a kprobe and a kretprobe are written
// with the same functions, found in the same order: the session link
// attaches the kprobe's, and the kretprobe's block tells them apart by
// the same attach cookies.
func sameFunctions(p, r *check.Probe) bool {
	if p.Syntax.Points[0].Parts[0] != r.Syntax.Points[0].Parts[0] || len(p.Targets) != len(r.Targets) {
		return false
	}
	for i, t := range p.Targets {
		if t.Name != r.Targets[i].Name {
			return false
		}
	}
	return true
}

// compileSession generates the program of a kprobe session: entry's
// block at the functions' entry, ret's at their return. The kprobe and
// the kretprobe compiled as kprobes are its fallback, for a kernel that
// refuses the session link.
func (c *compiler) compileSession(entry, ret *check.Probe) {
	why := fmt.Sprintf("the kprobe and the kretprobe on the same %d functions share one program and one kprobe session link, as bpftrace 0.26.1 pairs them", len(entry.Targets))
	if len(entry.Targets) == 1 {
		why = "the kprobe and the kretprobe on the same function share one program and one kprobe session link, as bpftrace 0.26.1 pairs them, rather than a trampoline each"
	}
	first := len(c.out.Targets)
	retFirst := first + len(entry.Targets)
	ids := c.probeIDs(entry.Targets, first)
	g := c.newGen(entry, MechKprobeSession, ids)
	name := fmt.Sprintf("probe%d", c.nprogs+1)
	g.namesName = "names_" + name
	g.sessionBody(ret, c.probeIDs(ret.Targets, retFirst))
	prog := c.finish(g, &Program{
		Name:        name,
		Probe:       entry,
		Return:      ret,
		Targets:     entry.Targets,
		FirstTarget: first,
		IDs:         ids,
		Mechanism:   MechKprobeSession,
		Why:         why,
	})
	if prog == nil {
		return
	}
	c.out.Targets = append(c.out.Targets, entry.Targets...)
	c.out.Targets = append(c.out.Targets, ret.Targets...)
	fbWhy := "the kernel refused the kprobe session link: one kprobe link per function"
	fbEntry := c.compileProbe(entry, MechKprobe, fbWhy, first)
	fbRet := c.compileProbe(ret, MechKprobe, fbWhy, retFirst)
	if fbEntry != nil && fbRet != nil {
		prog.Fallback = []*Program{fbEntry, fbRet}
	}
	c.out.Programs = append(c.out.Programs, prog)
}

// sessionBody generates a kprobe session's program: the kfunc
// bpf_session_is_return tells the return from the entry, where g.p's
// block runs and returns 0, so that the kernel runs the program again
// at the return; there ret's block runs, its targets' ids being retIDs.
func (g *gen) sessionBody(ret *check.Probe, retIDs []uint64) {
	isReturn, ok := kernel.FuncID("bpf_session_is_return")
	if !ok {
		g.c.errorf(g.p.Syntax, "a kprobe session calls the kernel's bpf_session_is_return, which its BTF does not describe")
		return
	}
	g.cur = g.p.Syntax.Pos()
	g.allocVars()
	atReturn := g.newLabel("return")
	// R1 holds the context, for kernels whose kfunc takes it (6.12's
	// takes nothing); it returns a bool, of which the low byte is
	// defined.
	g.emit(asm.Mov.Reg(asm.R1, regCtx), kernel.KfuncCall(isReturn),
		asm.And.Imm32(asm.R0, 0xff), asm.JNE.Imm(asm.R0, 0, atReturn))
	g.half()
	// The return half: a probe of its own, with its own variables and
	// targets. The session's attach cookies are the entry's ids, which
	// the return's follow by as many.
	g.cookieShift = retIDs[0] - g.ids[0]
	g.p, g.ids = ret, retIDs
	g.vars = map[string]mem{}
	g.exitLabel = g.newLabel("exit")
	g.place(atReturn)
	g.cur = ret.Syntax.Pos()
	g.allocVars()
	g.half()
	g.finish()
}
