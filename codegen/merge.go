package codegen

import (
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// mergeUprobes joins uprobe blocks that differ only in where they
// attach into one probe per file and body, which then loads as one
// program and attaches through one uprobe.multi link: a link costs the
// kernel a grace period to detach, and hundreds of blocks of one body,
// as a generated script writes them, would otherwise take seconds to
// load and tens of seconds to detach. The probe and func builtins tell
// the targets apart by attach cookie, as for a wildcard. A block whose
// body reads typed arguments or return values, which differ from
// function to function, stays on its own, and so does one naming a
// function another block of the same body already probes, so that both
// still fire for it. The merged probe keeps the place of its first
// block.
func (c *compiler) mergeUprobes(probes []*check.Probe) []*check.Probe {
	if !c.supports(MechUprobeMulti) {
		return probes
	}
	groups := map[string][]*uprobeGroup{}
	var out []*check.Probe
	for _, p := range probes {
		if p.Provider != "uprobe" && p.Provider != "uretprobe" || p.Args != nil || p.Ret != nil || !sameFile(p.Targets) {
			out = append(out, p)
			continue
		}
		key := p.Provider + "\x00" + targetFile(p.Targets[0]) + "\x00" +
			syntax.String(&syntax.Probe{Pred: p.Syntax.Pred, Body: p.Syntax.Body})
		var into *uprobeGroup
		for _, g := range groups[key] {
			if !g.hasAny(p.Targets) {
				into = g
				break
			}
		}
		if into == nil {
			merged := *p
			merged.Targets = append([]*check.Target(nil), p.Targets...)
			into = &uprobeGroup{probe: &merged, names: map[string]bool{}}
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

// A uprobeGroup is the blocks merged into one probe.
type uprobeGroup struct {
	probe *check.Probe    // a copy of the first block's, collecting targets
	names map[string]bool // the targets' names
}

func (g *uprobeGroup) hasAny(targets []*check.Target) bool {
	for _, t := range targets {
		if g.names[t.Name] {
			return true
		}
	}
	return false
}
