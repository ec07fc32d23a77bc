package codegen

import (
	"fmt"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/syntax"
)

// Options tune code generation.
type Options struct {
	// MapEntries bounds every @map; 0 means DefaultMapEntries.
	MapEntries int
	// EventsSize is the ring buffer's size in bytes, a power of two and a
	// multiple of the page size; 0 means DefaultEventsSize, or less when
	// the program's records are few and bounded (see eventsSize).
	EventsSize int
	// StackEntries bounds the stack-trace maps; 0 means
	// DefaultStackEntries.
	StackEntries int
	// Supports says whether the kernel offers a mechanism; it is asked
	// only about the mechanisms a probe could use, since the answer costs
	// a probe of the kernel.
	Supports func(Mechanism) bool
	// Force makes kprobes and kretprobes use one mechanism, for
	// comparisons; "" picks the cheapest.
	Force Mechanism
	// HelperChecks makes programs report failing helpers, as bpftrace's
	// -k (1: all but memory reads) and -kk (2: all).
	HelperChecks int
	// CPUs is how many CPUs the kernel may run: a loop over a count() or
	// sum() map adds up that many copies of each element. 0 means ask
	// the kernel, when such a loop needs it.
	CPUs int
	// CompatStatus gives the offset in a task_struct of the word whose
	// TS_COMPAT bit marks a 32-bit system call (kernel.CompatStatusOffset);
	// without it, syscalls tracepoints attach one perf event each.
	CompatStatus func() (int, error)
	// HasLoop says whether the kernel has the bpf_loop helper (5.17),
	// which runs a range loop whose bounds are not constants; without
	// it the verifier must bound such a loop itself. It is asked only
	// when a probe has such a loop.
	HasLoop func() bool
	// FilterPid, when not 0, ends kprobe, kretprobe, fentry, fexit,
	// tracepoint and rawtracepoint probes early in any other process,
	// as bpftrace 0.26.1 filters them under -p.
	FilterPid int
	// TSeriesClock names a map without keys holding an unsigned integer
	// (as "@ts") that tseries() reads as the time instead of the TAI
	// clock, as bpftrace's BPFTRACE_DUMMY_TS_MAP has it: tests advance
	// time by writing it.
	TSeriesClock string
}

// Defaults. bpftrace caps maps at 4096 keys too, and gives its
// stack-trace maps 128 Ki entries: stacks are hashed into buckets, and
// a stack whose bucket holds another is dropped, so a map sized as the
// others loses stacks under load.
const (
	DefaultMapEntries   = 4096
	DefaultStackEntries = 128 << 10
	DefaultEventsSize   = 2 << 20
	minEventsSize       = 16 << 10 // four pages; a ring buffer is at least one
)

// Frame budget: the BPF stack is 512 bytes; buffers beyond this much of
// it go to the scratch map instead.
const (
	stackLimit   = 512
	stackBudget  = 384      // what memory values may take, leaving room for spills and variables
	maxOnStack   = 128      // a value larger than this always goes to scratch
	scratchLimit = 32 << 10 // the kernel's bound on a per-CPU map value, PCPU_MIN_UNIT_SIZE
	maxInsns     = 1 << 20  // BPF_COMPLEXITY_LIMIT_INSNS

	// bigScratchLimit bounds a program's scratch memory when it is a
	// CPU's slice of an array rather than a per-CPU map value: what
	// R9 reaches with the instructions' signed 16-bit offsets, R9
	// pointing bigScratchBias bytes into the program's region.
	bigScratchLimit = 64 << 10
	bigScratchBias  = 32 << 10
	// bigScratchTotal bounds the regions of an array slice together:
	// the kernel's bound on an array's value, KMALLOC_MAX_SIZE (4 MiB
	// with 4 KiB pages).
	bigScratchTotal = 4 << 20
)

// Registers with fixed roles.
const (
	regCtx     = asm.R6
	regScratch = asm.R9
)

// Generate produces BPF for every probe of prog.
func Generate(prog *check.Program, opts *Options) (*Output, error) {
	out, c, err := generate(prog, opts, false)
	if c != nil && c.wantBigScratch {
		// Some program needs more scratch memory than a per-CPU map
		// value holds: generate them all again with scratch memory
		// that is each CPU's slice of an array.
		out, _, err = generate(prog, opts, true)
	}
	return out, err
}

// generate is Generate, with scratch memory in per-CPU maps or, when
// bigScratch is set, in arrays of one slice per CPU. It returns the
// compiler, which tells whether the programs need the larger scratch.
func generate(prog *check.Program, opts *Options, bigScratch bool) (*Output, *compiler, error) {
	o := *opts
	if o.MapEntries == 0 {
		o.MapEntries = DefaultMapEntries
	}
	if o.StackEntries == 0 {
		o.StackEntries = DefaultStackEntries
	}
	c := &compiler{
		prog: prog,
		opts: &o,
		out: &Output{
			Collection: &ebpf.CollectionSpec{
				Maps:     map[string]*ebpf.MapSpec{},
				Programs: map[string]*ebpf.ProgramSpec{},
			},
			File:   prog.Syntax.File,
			Compat: prog.Compat,
			StrLen: prog.StrLen,
		},
		maps:       map[*check.Map]*Map{},
		bigScratch: bigScratch,
	}
	if bigScratch {
		n, err := ebpf.PossibleCPU()
		if err != nil {
			return nil, nil, fmt.Errorf("scratch memory for each CPU: %w", err)
		}
		c.ncpu = n
	}
	if err := c.checkTSeriesClock(); err != nil {
		return nil, nil, err
	}
	c.declareMaps()
	var probes []*check.Probe
	for _, p := range c.mergeProbes(c.pairSessions(splitUSDT(prog.Probes))) {
		probes = append(probes, c.splitSyscalls(p)...)
	}
	for _, p := range probes {
		if ret := c.sessions[p]; ret != nil {
			c.compileSession(p, ret)
			continue
		}
		mech, why := c.choose(p)
		if (mech.IsTrampoline() || mech == MechRawTracepoint) && len(p.Targets) > 1 {
			// A trampoline program is bound to one function when it is
			// loaded, and raw tracepoints take attach cookies only from
			// 6.10 on: each target gets a program of its own.
			for _, t := range p.Targets {
				one := *p
				one.Targets = []*check.Target{t}
				c.compile(&one, mech, why)
			}
			continue
		}
		c.compile(p, mech, why)
	}
	if c.wantBigScratch {
		return nil, c, nil
	}
	if len(c.errs) > 0 {
		c.errs.Sort()
		return nil, c, c.errs
	}
	c.declareInternalMaps()
	return c.out, c, nil
}

// compiler holds what is shared by the programs of one source program.
type compiler struct {
	prog *check.Program
	opts *Options
	out  *Output
	maps map[*check.Map]*Map
	errs syntax.ErrorList
	// sessions pairs each kprobe that runs as a kprobe session with its
	// kretprobe (pairSessions).
	sessions map[*check.Probe]*check.Probe

	nprogs      int // programs generated so far, for naming
	compatAsked bool
	compatOff   int // CompatStatus's answer, or -1
	// Scratch memory: the ScratchMap region programs that share it
	// need (the most any of them needs), and the OwnScratchMap regions
	// of the others, summed.
	sharedScratch int
	ownScratch    int
	// bigScratch puts scratch memory in arrays of one slice for each
	// of the ncpu CPUs, which hold more than per-CPU map values do;
	// wantBigScratch says that some program needs it.
	bigScratch     bool
	ncpu           int
	wantBigScratch bool
	buildIDDepth   int // deepest ustack(build_id)
	kstackDepth    int // deepest kstack asked for
	ustackDepth    int
	// Records: whether any action can send records without bound (in a
	// probe that fires repeatedly, or in a loop), and otherwise the ring
	// buffer space all of them take at once.
	streams   bool
	onceBytes int
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
		gm := &Map{Map: m, Spec: "map" + strconv.Itoa(i), Index: i}
		key := m.Key
		if key == nil {
			key = check.TupleType([]*check.Type{check.TUint64})
		}
		valueSize := m.Value.Size
		mapType := ebpf.Hash
		switch m.Value.Kind {
		case check.Hist, check.Lhist, check.TSeries:
			keys := append(append([]*check.Type{}, m.Keys...), check.TUint64)
			key = check.TupleType(keys)
			gm.PerCPU = true
		case check.Count, check.Sum, check.Min, check.Max, check.Avg, check.Stats:
			gm.PerCPU = true
		}
		if gm.PerCPU {
			mapType = ebpf.PerCPUHash
		}
		// A declaration (let @m = lruhash(N)) picks the LRU kinds and
		// the size; the checker has matched its per-CPU-ness to the values.
		if m.Kind == "lruhash" || m.Kind == "percpulruhash" {
			mapType = map[bool]ebpf.MapType{false: ebpf.LRUHash, true: ebpf.LRUCPUHash}[gm.PerCPU]
		}
		entries := c.opts.MapEntries
		if m.Entries > 0 {
			entries = m.Entries
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
			MaxEntries: uint32(entries),
		}
	}
}

// eventsSize chooses the ring buffer's size. The kernel maps the whole
// buffer into kinst twice over, so its size is resident memory: a
// program whose records come once each (from begin, end and test
// probes, outside loops) gets twice what they take instead of the
// default, as `@[comm] = count()` sends none at all.
func (c *compiler) eventsSize() int {
	if c.opts.EventsSize != 0 {
		return c.opts.EventsSize
	}
	if c.streams {
		return DefaultEventsSize
	}
	size := minEventsSize
	for size < 2*c.onceBytes && size < DefaultEventsSize {
		size *= 2
	}
	return size
}

func (c *compiler) declareInternalMaps() {
	specs := c.out.Collection.Maps
	c.out.EventsSize = c.eventsSize()
	specs[EventsMap] = &ebpf.MapSpec{Name: EventsMap, Type: ebpf.RingBuf, MaxEntries: uint32(c.out.EventsSize)}
	specs[LostMap] = &ebpf.MapSpec{Name: LostMap, Type: ebpf.Array, KeySize: 4, ValueSize: uint32(8 * (lostFixed + len(c.out.Maps))), MaxEntries: 1, Flags: unix.BPF_F_MMAPABLE}
	specs[ConstsMap] = &ebpf.MapSpec{Name: ConstsMap, Type: ebpf.Array, KeySize: 4, ValueSize: constsSize, MaxEntries: 1}
	scratchType, slices := ebpf.PerCPUArray, 1
	if c.bigScratch {
		scratchType, slices = ebpf.Array, c.ncpu
	}
	if c.sharedScratch > 0 {
		specs[ScratchMap] = &ebpf.MapSpec{Name: ScratchMap, Type: scratchType, KeySize: 4, ValueSize: uint32(alignUp(c.sharedScratch, 8)), MaxEntries: uint32(slices)}
	}
	if c.ownScratch > 0 {
		specs[OwnScratchMap] = &ebpf.MapSpec{Name: OwnScratchMap, Type: scratchType, KeySize: 4, ValueSize: uint32(alignUp(c.ownScratch, 8)), MaxEntries: uint32(slices)}
	}
	if c.kstackDepth > 0 {
		specs[KstackMap] = &ebpf.MapSpec{Name: KstackMap, Type: ebpf.StackTrace, KeySize: 4, ValueSize: uint32(8 * c.kstackDepth), MaxEntries: uint32(c.opts.StackEntries)}
	}
	if len(c.out.SkbOutputs) > 0 {
		// The kernel sizes it to the CPUs when it is created.
		specs[PacketsMap] = &ebpf.MapSpec{Name: PacketsMap, Type: ebpf.PerfEventArray}
	}
	if c.ustackDepth > 0 {
		specs[UstackMap] = &ebpf.MapSpec{Name: UstackMap, Type: ebpf.StackTrace, KeySize: 4, ValueSize: uint32(8 * c.ustackDepth), MaxEntries: uint32(c.opts.StackEntries)}
	}
	if c.buildIDDepth > 0 {
		specs[BuildIDStackMap] = &ebpf.MapSpec{Name: BuildIDStackMap, Type: ebpf.StackTrace, Flags: unix.BPF_F_STACK_BUILD_ID,
			KeySize: 4, ValueSize: uint32(BuildIDFrameSize * c.buildIDDepth), MaxEntries: uint32(c.opts.StackEntries)}
	}
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// compile generates a probe's program, and for a kprobe running as a
// trampoline or through kprobe.multi also a kprobe program to fall back
// on: some functions that BTF describes still refuse trampolines, and
// one function the kernel will not probe fails a whole multi link, which
// only loading and attaching reveal.
func (c *compiler) compile(p *check.Probe, mech Mechanism, why string) {
	prog := c.compileProbe(p, mech, why, len(c.out.Targets))
	if prog == nil {
		return
	}
	var fallback *Program
	switch {
	case mech.IsTrampoline() && (p.Provider == "kprobe" || p.Provider == "kretprobe"):
		fallback = c.compileProbe(p, MechKprobe, "the kernel refused a trampoline for this function", prog.FirstTarget)
	case mech == MechKprobeMulti:
		fallback = c.compileProbe(p, MechKprobe, "the kernel refused the kprobe.multi link: one kprobe link per function", prog.FirstTarget)
	}
	if fallback != nil {
		prog.Fallback = []*Program{fallback}
	}
	c.out.Targets = append(c.out.Targets, p.Targets...)
	c.out.Programs = append(c.out.Programs, prog)
	c.compileWatchSetups(prog)
}

// probeIDs gives each of the targets starting at firstTarget in
// Output.Targets the index of the first target of its name: probe and
// func yield it, so that the sites of a USDT probe, which share a name,
// are one probe in maps and output, as in bpftrace.
func (c *compiler) probeIDs(targets []*check.Target, firstTarget int) []uint64 {
	ids := make([]uint64, len(targets))
	for i, t := range targets {
		ids[i] = uint64(firstTarget + i)
		if t.Provider != "usdt" {
			continue
		}
		all := append(c.out.Targets[:firstTarget:firstTarget], targets[:i]...)
		for j, u := range all {
			if u.FullName() == t.FullName() {
				ids[i] = uint64(j)
				break
			}
		}
	}
	return ids
}

// compileProbe generates one program whose targets start at firstTarget
// in Output.Targets.
func (c *compiler) compileProbe(p *check.Probe, mech Mechanism, why string, firstTarget int) *Program {
	ids := c.probeIDs(p.Targets, firstTarget)
	g := c.newGen(p, mech, ids)
	name := fmt.Sprintf("probe%d", c.nprogs+1)
	g.namesName = "names_" + name
	if mech == MechSyscalls {
		g.tableName = "sysnr_" + name
		g.table = syscallTable(g.tableName, p.Targets, ids)
	}
	g.body()
	return c.finish(g, &Program{
		Name:        name,
		Probe:       p,
		Targets:     p.Targets,
		FirstTarget: firstTarget,
		IDs:         ids,
		Mechanism:   mech,
		Why:         why,
	})
}

// newGen starts the generation of a program of mechanism mech whose
// probe p yields ids for its targets.
func (c *compiler) newGen(p *check.Probe, mech Mechanism, ids []uint64) *gen {
	g := &gen{c: c, p: p, mech: mech, vars: map[string]mem{}, aliases: map[string]string{}, ids: ids}
	if !mech.sharesScratch() {
		g.scratchBase = c.ownScratch
	}
	g.exitLabel = g.newLabel("exit")
	return g
}

// finish accounts for the memory of the program g generated and adds
// its spec to the collection; prog says what it is. It returns prog, or
// nil when g generated nothing.
func (c *compiler) finish(g *gen, prog *Program) *Program {
	if len(g.insns) == 0 {
		return nil
	}
	p, mech := prog.Probe, prog.Mechanism
	if mech.sharesScratch() {
		c.sharedScratch = max(c.sharedScratch, g.scratch.max)
	} else {
		switch total := c.ownScratch + g.scratch.max; {
		case !c.bigScratch && g.scratch.max <= scratchLimit && c.ownScratch <= scratchLimit && total > scratchLimit:
			// More than a per-CPU map value holds: the programs
			// are generated again with arrays of a slice per CPU.
			c.wantBigScratch = true
		case c.bigScratch && g.scratch.max <= bigScratchLimit && c.ownScratch <= bigScratchTotal && total > bigScratchTotal:
			c.errorf(p.Syntax, "this probe and those before it that may run nested in other probes need %d bytes of scratch memory together; "+
				"the kernel allows %d (a smaller BPFTRACE_MAX_STRLEN needs less)", total, bigScratchTotal)
		}
		// The next region starts aligned, as the values in it are.
		c.ownScratch += alignUp(g.scratch.max, 8)
	}
	c.nprogs++
	if g.table != nil {
		c.out.Collection.Maps[g.tableName] = g.table
	}
	if g.names != nil {
		c.out.Collection.Maps[g.namesName] = g.names
	}
	name := prog.Name
	ret := p.Provider == "kretprobe" || p.Provider == "uretprobe"
	ptype, atype := programType(mech, ret)
	spec := &ebpf.ProgramSpec{
		Name:         mapName("", fmt.Sprintf("p%d_%s", c.nprogs, p.Provider)),
		Type:         ptype,
		AttachType:   atype,
		License:      "GPL",
		Instructions: g.insns,
	}
	if mech.IsTrampoline() || mech == MechIter {
		spec.AttachTo = p.Targets[0].Func
	}
	c.out.Collection.Programs[name] = spec
	prog.Cookies, prog.Pos = g.cookies, g.pos
	return prog
}
