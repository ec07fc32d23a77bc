package codegen

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// Options tune code generation.
type Options struct {
	// MapEntries bounds every @map; 0 means DefaultMapEntries.
	MapEntries int
	// EventsSize is the ring buffer's size in bytes, a power of two and a
	// multiple of the page size; 0 means DefaultEventsSize.
	EventsSize int
	// StackEntries bounds the stack-trace maps; 0 means DefaultMapEntries.
	StackEntries int
	// KprobeMulti and UprobeMulti say the kernel attaches many functions
	// with one link; probes with several targets are then loaded for it.
	KprobeMulti, UprobeMulti bool
}

// Defaults. bpftrace caps maps at 4096 keys too.
const (
	DefaultMapEntries = 4096
	DefaultEventsSize = 8 << 20
)

// Frame budget: the BPF stack is 512 bytes; buffers beyond this much of
// it go to the scratch map instead.
const (
	stackLimit   = 512
	stackBudget  = 384 // what memory values may take, leaving room for spills and variables
	maxOnStack   = 128 // a value larger than this always goes to scratch
	scratchLimit = 1 << 16
	maxInsns     = 1 << 20 // BPF_COMPLEXITY_LIMIT_INSNS
)

// Registers with fixed roles.
const (
	regCtx     = asm.R6
	regScratch = asm.R9
)

// Generate produces BPF for every probe of prog.
func Generate(prog *check.Program, opts *Options) (*Output, error) {
	o := *opts
	if o.MapEntries == 0 {
		o.MapEntries = DefaultMapEntries
	}
	if o.EventsSize == 0 {
		o.EventsSize = DefaultEventsSize
	}
	if o.StackEntries == 0 {
		o.StackEntries = DefaultMapEntries
	}
	c := &compiler{
		prog: prog,
		opts: &o,
		out: &Output{
			Collection: &ebpf.CollectionSpec{
				Maps:     map[string]*ebpf.MapSpec{},
				Programs: map[string]*ebpf.ProgramSpec{},
			},
			EventsSize: o.EventsSize,
			File:       prog.Syntax.File,
		},
		maps: map[*check.Map]*Map{},
	}
	c.declareMaps()
	for _, p := range prog.Probes {
		if onePerTarget(p.Provider) && len(p.Targets) > 1 {
			// A trampoline program is bound to one function when it is
			// loaded, and raw tracepoints take attach cookies only from
			// 6.10 on: each target gets a program of its own.
			for _, t := range p.Targets {
				one := *p
				one.Targets = []*check.Target{t}
				c.compileProbe(&one)
			}
			continue
		}
		c.compileProbe(p)
	}
	if len(c.errs) > 0 {
		c.errs.Sort()
		return nil, c.errs
	}
	c.declareInternalMaps()
	return c.out, nil
}

// compiler holds what is shared by the programs of one source program.
type compiler struct {
	prog *check.Program
	opts *Options
	out  *Output
	maps map[*check.Map]*Map
	errs syntax.ErrorList

	scratchSize int // total scratch, summed over programs
	kstackDepth int // deepest kstack asked for
	ustackDepth int
}

func (c *compiler) errorf(n syntax.Node, format string, args ...any) {
	c.errs.Add(c.prog.Syntax.File, n.Pos(), n.End(), format, args...)
}

// mapName gives a kernel-visible map name: BPF allows 15 characters of
// letters, digits, underscores and dots.
func mapName(prefix, name string) string {
	b := []byte(prefix + name)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '.') {
			b[i] = '_'
		}
	}
	if len(b) > 15 {
		b = b[:15]
	}
	return string(b)
}

func (c *compiler) declareMaps() {
	for i, m := range c.prog.Maps {
		gm := &Map{Map: m, Spec: "map" + strconv.Itoa(i)}
		key := m.Key
		if key == nil {
			key = check.TupleType([]*check.Type{check.TUint64})
		}
		valueSize := m.Value.Size
		mapType := ebpf.Hash
		switch m.Value.Kind {
		case check.Hist, check.Lhist:
			keys := append(append([]*check.Type{}, m.Keys...), check.TUint64)
			key = check.TupleType(keys)
			gm.PerCPU = true
		case check.Count, check.Sum, check.Min, check.Max, check.Avg, check.Stats:
			gm.PerCPU = true
		}
		if gm.PerCPU {
			mapType = ebpf.PerCPUHash
		}
		gm.Key = key
		gm.ValueSize = valueSize
		c.maps[m] = gm
		c.out.Maps = append(c.out.Maps, gm)
		c.out.Collection.Maps[gm.Spec] = &ebpf.MapSpec{
			Name:       mapName("m_", m.Name),
			Type:       mapType,
			KeySize:    uint32(key.Size),
			ValueSize:  uint32(valueSize),
			MaxEntries: uint32(c.opts.MapEntries),
		}
	}
}

func (c *compiler) declareInternalMaps() {
	specs := c.out.Collection.Maps
	specs[EventsMap] = &ebpf.MapSpec{Name: EventsMap, Type: ebpf.RingBuf, MaxEntries: uint32(c.opts.EventsSize)}
	specs[LostMap] = &ebpf.MapSpec{Name: LostMap, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1}
	specs[ConstsMap] = &ebpf.MapSpec{Name: ConstsMap, Type: ebpf.Array, KeySize: 4, ValueSize: constsSize, MaxEntries: 1}
	if c.scratchSize > 0 {
		specs[ScratchMap] = &ebpf.MapSpec{Name: ScratchMap, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(alignUp(c.scratchSize, 8)), MaxEntries: 1}
	}
	if c.kstackDepth > 0 {
		specs[KstackMap] = &ebpf.MapSpec{Name: KstackMap, Type: ebpf.StackTrace, KeySize: 4, ValueSize: uint32(8 * c.kstackDepth), MaxEntries: uint32(c.opts.StackEntries)}
	}
	if c.ustackDepth > 0 {
		specs[UstackMap] = &ebpf.MapSpec{Name: UstackMap, Type: ebpf.StackTrace, KeySize: 4, ValueSize: uint32(8 * c.ustackDepth), MaxEntries: uint32(c.opts.StackEntries)}
	}
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// programType maps a provider to the BPF program type and attach type
// its programs load as.
func programType(provider string, multi bool) (ebpf.ProgramType, ebpf.AttachType) {
	switch provider {
	case "BEGIN", "END", "rawtracepoint":
		return ebpf.RawTracepoint, ebpf.AttachNone
	case "tracepoint":
		return ebpf.TracePoint, ebpf.AttachNone
	case "profile", "interval", "software", "hardware":
		return ebpf.PerfEvent, ebpf.AttachNone
	case "kprobe", "kretprobe":
		if multi {
			return ebpf.Kprobe, ebpf.AttachTraceKprobeMulti
		}
		return ebpf.Kprobe, ebpf.AttachNone
	case "uprobe", "uretprobe":
		if multi {
			return ebpf.Kprobe, ebpf.AttachTraceUprobeMulti
		}
		return ebpf.Kprobe, ebpf.AttachNone
	case "fentry":
		return ebpf.Tracing, ebpf.AttachTraceFEntry
	case "fexit":
		return ebpf.Tracing, ebpf.AttachTraceFExit
	case "fmod_ret":
		return ebpf.Tracing, ebpf.AttachModifyReturn
	}
	return ebpf.UnspecifiedProgram, ebpf.AttachNone
}

// multi decides whether one multi link attaches all of p's targets.
func (c *compiler) multi(p *check.Probe) bool {
	if len(p.Targets) < 2 {
		return false
	}
	switch p.Provider {
	case "kprobe", "kretprobe":
		if !c.opts.KprobeMulti {
			return false
		}
		for _, t := range p.Targets {
			if t.Name != t.Func { // an offset into a function needs a kprobe
				return false
			}
		}
		return true
	case "uprobe", "uretprobe":
		return c.opts.UprobeMulti && sameFile(p.Targets)
	}
	return false
}

// sameFile reports whether uprobe targets are all in one file, which a
// uprobe.multi link requires.
func sameFile(targets []*check.Target) bool {
	path := func(t *check.Target) string {
		file, _, _ := strings.Cut(t.Name, ":")
		return file
	}
	for _, t := range targets[1:] {
		if path(t) != path(targets[0]) {
			return false
		}
	}
	return true
}

func isTrampoline(provider string) bool {
	return provider == "fentry" || provider == "fexit" || provider == "fmod_ret"
}

func onePerTarget(provider string) bool {
	return isTrampoline(provider) || provider == "rawtracepoint"
}

// compileProbe generates the program of one checked probe.
func (c *compiler) compileProbe(p *check.Probe) {
	index := len(c.out.Programs)
	g := &gen{c: c, p: p, vars: map[string]mem{}, aliases: map[string]string{}, firstTarget: len(c.out.Targets)}
	g.scratchBase = c.scratchSize
	g.exitLabel = g.newLabel("exit")
	g.body()
	if len(g.insns) == 0 {
		return
	}
	c.scratchSize += g.scratch.max
	name := fmt.Sprintf("probe%d", index)
	multi := c.multi(p)
	ptype, atype := programType(p.Provider, multi)
	spec := &ebpf.ProgramSpec{
		Name:         mapName("", fmt.Sprintf("p%d_%s", index, p.Provider)),
		Type:         ptype,
		AttachType:   atype,
		License:      "GPL",
		Instructions: g.insns,
	}
	if isTrampoline(p.Provider) {
		spec.AttachTo = p.Targets[0].Func
	}
	c.out.Collection.Programs[name] = spec
	c.out.Targets = append(c.out.Targets, p.Targets...)
	c.out.Programs = append(c.out.Programs, &Program{
		Name:        name,
		Probe:       p,
		Targets:     p.Targets,
		FirstTarget: g.firstTarget,
		Multi:       multi,
		Cookies:     g.cookies,
		Pos:         g.pos,
	})
}

// debugf prints code generation traces when KINST_DEBUG_CODEGEN is set;
// it helps when a verifier rejection needs to be traced back.
func debugf(format string, args ...any) {
	if os.Getenv("KINST_DEBUG_CODEGEN") != "" {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}
