package codegen

import (
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// mergeProbes joins blocks that differ only in where they attach into
// one probe per body, which then loads as one program and attaches
// through one link: uprobe blocks on one file through a uprobe.multi
// link, kprobe blocks through a kprobe.multi link. A link costs the
// kernel a grace period to detach, and hundreds of blocks of one body,
// as a generated script writes them, would otherwise take seconds to
// load and tens of seconds to detach. The probe and func builtins tell
// the targets apart by attach cookie, as for a wildcard. A block naming
// a function another block of the same body already probes stays on
// its own, so that both still fire for it. The merged probe keeps the
// place of its first block, so a block joins it only if no probe placed
// after it probes one of the block's functions: the programs on one
// function run in the order of the source's blocks.
func (c *compiler) mergeProbes(probes []*check.Probe) []*check.Probe {
	groups := map[string][]*probeGroup{}
	var out []*check.Probe
	for _, p := range probes {
		key, ok := c.mergeKey(p)
		if !ok {
			out = append(out, p)
			continue
		}
		var into *probeGroup
		for _, g := range groups[key] {
			if !g.hasAny(p.Targets) && !probesAny(out[g.at+1:], p.Targets) {
				into = g
				break
			}
		}
		if into == nil {
			merged := *p
			merged.Targets = append([]*check.Target(nil), p.Targets...)
			into = &probeGroup{probe: &merged, at: len(out), names: map[string]bool{}}
			groups[key] = append(groups[key], into)
			out = append(out, into.probe)
		} else {
			into.probe.Targets = append(into.probe.Targets, p.Targets...)
		}
		for _, t := range p.Targets {
			into.names[t.Name] = true
		}
	}
	return out
}

// mergeKey is what blocks must share to be merged, and false for a
// block that stays on its own: one the kernel's multi link cannot
// serve, or one whose code depends on its function. That is a block
// reading typed arguments or (uprobes) return values, which differ from
// function to function; a kretprobe reading retval merges only with
// blocks whose functions return the same type. A kprobe block whose
// body reads saved registers, probes at an offset or probes a function
// ftrace cannot reach needs kprobe links of its own, and a kernel
// without the multi link, or an --attach other than kprobe.multi,
// merges nothing. A kprobe paired with a kretprobe in a kprobe session
// is not merged further.
func (c *compiler) mergeKey(p *check.Probe) (string, bool) {
	if c.sessions[p] != nil {
		return "", false // a kprobe session's program is its own
	}
	body := syntax.String(&syntax.Probe{Pred: p.Syntax.Pred, Body: p.Syntax.Body})
	switch p.Provider {
	case "uprobe", "uretprobe":
		if !c.supports(MechUprobeMulti) || p.Args != nil || p.Ret != nil || !sameFile(p.Targets) {
			return "", false
		}
		return p.Provider + "\x00" + targetFile(p.Targets[0]) + "\x00" + body, true
	case "kprobe", "kretprobe":
		if !c.supports(MechKprobeMulti) || c.opts.Force != "" && c.opts.Force != MechKprobeMulti ||
			p.Uses["args"] || usesRegisters(p) {
			return "", false
		}
		for _, t := range p.Targets {
			if hasOffset(t) || t.NoFtrace {
				return "", false
			}
		}
		ret := ""
		if p.Ret != nil && p.Uses["retval"] {
			ret = p.Ret.String()
		}
		return p.Provider + "\x00" + ret + "\x00" + body, true
	}
	return "", false
}

// A probeGroup is the blocks merged into one probe.
type probeGroup struct {
	probe *check.Probe    // a copy of the first block's, collecting targets
	at    int             // the probe's place among mergeProbes's results
	names map[string]bool // the targets' names
}

// probesAny reports whether one of probes has a target of the same name
// as one of targets.
func probesAny(probes []*check.Probe, targets []*check.Target) bool {
	for _, p := range probes {
		for _, t := range p.Targets {
			for _, u := range targets {
				if t.Name == u.Name {
					return true
				}
			}
		}
	}
	return false
}

func (g *probeGroup) hasAny(targets []*check.Target) bool {
	for _, t := range targets {
		if g.names[t.Name] {
			return true
		}
	}
	return false
}
