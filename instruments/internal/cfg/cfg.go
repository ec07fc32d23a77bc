package cfg

import (
	"fmt"
	"sort"
	"strings"
)

// A Region is a stretch of one function's machine code: the function
// itself, or a part the compiler moved away from it (FUNC.cold).
type Region struct {
	Name string
	Addr uint64
	Code []byte
}

func (r *Region) contains(addr uint64) bool {
	return addr >= r.Addr && addr-r.Addr < uint64(len(r.Code))
}

// An Inst is one decoded instruction.
type Inst struct {
	Addr uint64
	Len  int
	Text string // AT&T syntax, as objdump writes it

	flow   flow
	target uint64 // where a direct jump or call goes
	pad    bool   // a nop or int3: what compilers align code with
}

// Mnemonic is the instruction's operation as objdump names it: "ud2".
func (in Inst) Mnemonic() string {
	m, _, _ := strings.Cut(in.Text, " ")
	return m
}

// Nop reports whether the instruction is a nop, of whatever length.
func (in Inst) Nop() bool { return in.pad && in.flow != flowTrap }

// flow is how control leaves an instruction.
type flow uint8

const (
	flowNext     flow = iota // on to the next instruction
	flowCall                 // a direct call, which returns to the next instruction
	flowBranch               // a conditional jump: to target, or on
	flowJump                 // a direct jump to target
	flowIndirect             // an indirect jump: the destination is not in the code
	flowReturn               // ret, iret, sysret
	flowTrap                 // int3: execution does not go on
)

// ends reports whether the instruction ends a basic block.
func (f flow) ends() bool { return f != flowNext && f != flowCall }

// An EdgeKind says how control passes along an edge.
type EdgeKind uint8

const (
	EdgeEntry   EdgeKind = iota // the call that enters the function
	EdgeTaken                   // a jump taken
	EdgeFall                    // on to the next block: a conditional jump not taken, or no jump at all
	EdgeExit                    // out of the function: a return, a tail call, a call that does not return
	EdgeUnknown                 // an indirect jump, or an entry the code does not show
)

var edgeKindNames = [...]string{"entry", "taken", "fall", "exit", "unknown"}

func (k EdgeKind) String() string { return edgeKindNames[k] }

// An Edge is a way from one block to another. From is nil for the entry
// and for blocks entered in ways the code does not show; To is nil for
// exits and indirect jumps.
type Edge struct {
	Index    int
	From, To *Block
	Kind     EdgeKind
	Note     string // for exits and unknown edges: what they are, such as "tail call to foo"
}

// A Block is a basic block: straight-line code entered only at its first
// instruction and left only after its last.
type Block struct {
	Index      int
	Region     int    // index into CFG.Regions
	Start, End uint64 // addresses: [Start, End)
	Insts      []Inst
	In, Out    []*Edge
}

// A CFG is a function's control-flow graph.
type CFG struct {
	Regions []Region
	Insts   [][]Inst // every instruction of each region, padding included
	Blocks  []*Block // by region, then by address; Blocks[0] is the entry
	Edges   []*Edge
}

// splitError says why a function cannot be split into basic blocks.
type splitError struct{ fn, why string }

func (e *splitError) Error() string { return "cannot split " + e.fn + " into basic blocks: " + e.why }

// SymLookup names an address outside the regions: the symbol starting
// exactly there and its address, or "" when none does.
type SymLookup func(addr uint64) (name string, base uint64)

// Build decodes the regions, of which the first is the function and
// the others its outlined parts, and splits them into basic blocks.
//
// Leaders are the entry, every jump target and every instruction after
// a jump, return or int3; calls fall through. A direct jump out of the
// regions is an exit (a tail call, or a return through a return thunk),
// a jump through a retpoline thunk or a register is an indirect jump
// with an unknown destination, and runs of nops and int3 that nothing
// reaches are alignment padding, in no block. A call followed only by
// int3 padding does not return. Blocks the code shows no way into (the
// targets of exception fixups, say) get an unknown incoming edge.
func Build(regions []Region, sym SymLookup) (*CFG, error) {
	if len(regions) == 0 {
		return nil, &splitError{"nothing", "no code"}
	}
	if len(regions[0].Code) == 0 {
		return nil, &splitError{regions[0].Name, "no code"}
	}
	g := &CFG{Regions: regions}
	name := func(addr uint64) (string, uint64) {
		if r := g.region(addr); r >= 0 {
			return g.label(addr), addr
		}
		if sym != nil {
			return sym(addr)
		}
		return "", 0
	}
	at := map[uint64]bool{}
	for _, r := range regions {
		insts, err := decodeRegion(r, name)
		if err != nil {
			return nil, err
		}
		g.Insts = append(g.Insts, insts)
		for _, in := range insts {
			at[in.Addr] = true
		}
	}

	leaders := map[uint64]bool{}
	for ri, insts := range g.Insts {
		leaders[regions[ri].Addr] = true
		for i, in := range insts {
			next := in.Addr + uint64(in.Len)
			if g.internal(in) {
				if !at[in.target] {
					return nil, &splitError{regions[0].Name, fmt.Sprintf("the %s at %s goes to %s, inside an instruction", in.Mnemonic(), g.label(in.Addr), g.label(in.target))}
				}
				leaders[in.target] = true
				if in.flow == flowCall {
					leaders[next] = true
				}
			}
			// An int3 after anything but int3 starts a block, which is
			// padding when only falling into it reaches it.
			if in.flow.ends() || i+1 < len(insts) && insts[i+1].flow == flowTrap && in.flow != flowTrap {
				leaders[next] = true
			}
		}
	}

	for ri, insts := range g.Insts {
		var b *Block
		for _, in := range insts {
			if b == nil || leaders[in.Addr] {
				b = &Block{Region: ri, Start: in.Addr}
				g.Blocks = append(g.Blocks, b)
			}
			b.Insts = append(b.Insts, in)
			b.End = in.Addr + uint64(in.Len)
		}
	}
	g.link(sym)
	g.dropPadding()
	for _, b := range g.Blocks[1:] {
		if len(b.In) == 0 {
			g.addEdge(&Edge{To: b, Kind: EdgeUnknown, Note: "entered in a way the code does not show"})
		}
	}
	g.addEdge(&Edge{To: g.Blocks[0], Kind: EdgeEntry, Note: "call"})
	g.renumber()
	return g, nil
}

// link adds the edges out of every block.
func (g *CFG) link(sym SymLookup) {
	starts := make(map[uint64]*Block, len(g.Blocks))
	for _, b := range g.Blocks {
		starts[b.Start] = b
	}
	for _, b := range g.Blocks {
		last := b.Insts[len(b.Insts)-1]
		fall := func() {
			if next := starts[b.End]; next != nil && next.Region == b.Region {
				g.addEdge(&Edge{From: b, To: next, Kind: EdgeFall})
				return
			}
			g.addEdge(&Edge{From: b, Kind: EdgeExit, Note: "runs off the end of " + g.Regions[b.Region].Name})
		}
		jump := func() {
			if to := starts[last.target]; to != nil {
				g.addEdge(&Edge{From: b, To: to, Kind: EdgeTaken})
				return
			}
			callee := ""
			if sym != nil {
				callee, _ = sym(last.target)
			}
			switch {
			case strings.HasPrefix(callee, "__x86_indirect_"):
				g.addEdge(&Edge{From: b, Kind: EdgeUnknown, Note: "indirect jump through " + callee})
			case strings.Contains(callee, "return_thunk") || strings.HasSuffix(callee, "untrain_ret"):
				g.addEdge(&Edge{From: b, Kind: EdgeExit, Note: "return through " + callee})
			case callee != "":
				g.addEdge(&Edge{From: b, Kind: EdgeExit, Note: "tail call to " + callee})
			default:
				g.addEdge(&Edge{From: b, Kind: EdgeExit, Note: fmt.Sprintf("jump to %#x", last.target)})
			}
		}
		switch last.flow {
		case flowNext:
			fall()
		case flowCall:
			if g.internal(last) {
				jump()
			}
			fall()
		case flowBranch:
			jump()
			fall()
		case flowJump:
			jump()
		case flowIndirect:
			g.addEdge(&Edge{From: b, Kind: EdgeUnknown, Note: "indirect jump"})
		case flowReturn:
			g.addEdge(&Edge{From: b, Kind: EdgeExit, Note: "return"})
		case flowTrap:
			g.addEdge(&Edge{From: b, Kind: EdgeExit, Note: "traps (int3)"})
		}
	}
}

func (g *CFG) addEdge(e *Edge) {
	g.Edges = append(g.Edges, e)
	if e.From != nil {
		e.From.Out = append(e.From.Out, e)
	}
	if e.To != nil {
		e.To.In = append(e.To.In, e)
	}
}

// dropPadding removes blocks of nops that nothing reaches and blocks of
// int3 that only fall-through reaches. Falling into int3 means the call
// before it does not return, which becomes that block's exit.
func (g *CFG) dropPadding() {
	dropped := map[*Block]bool{}
	for changed := true; changed; {
		changed = false
		for _, b := range g.Blocks[1:] {
			if dropped[b] || !padding(b) {
				continue
			}
			trap := false
			for _, in := range b.Insts {
				trap = trap || in.flow == flowTrap
			}
			onlyFall := true
			for _, e := range b.In {
				onlyFall = onlyFall && e.Kind == EdgeFall
			}
			if len(b.In) > 0 && !(trap && onlyFall) {
				continue
			}
			dropped[b] = true
			changed = true
			for _, e := range b.In {
				e.To = nil
				e.Kind = EdgeExit
				e.Note = "does not return: int3 follows"
				if last := e.From.Insts[len(e.From.Insts)-1]; last.flow == flowCall {
					e.Note = "the call does not return"
				}
			}
			for _, e := range b.Out {
				if e.To != nil {
					e.To.In = removeEdge(e.To.In, e)
				}
			}
		}
	}
	blocks := g.Blocks[:0]
	for _, b := range g.Blocks {
		if !dropped[b] {
			blocks = append(blocks, b)
		}
	}
	g.Blocks = blocks
	edges := g.Edges[:0]
	for _, e := range g.Edges {
		if !dropped[e.From] {
			edges = append(edges, e)
		}
	}
	g.Edges = edges
}

func padding(b *Block) bool {
	for _, in := range b.Insts {
		if !in.pad {
			return false
		}
	}
	return true
}

func removeEdge(list []*Edge, e *Edge) []*Edge {
	out := list[:0]
	for _, x := range list {
		if x != e {
			out = append(out, x)
		}
	}
	return out
}

func (g *CFG) renumber() {
	for i, b := range g.Blocks {
		b.Index = i
	}
	// Edges in the order of the blocks they leave, the unknown entries
	// and the entry last.
	sort.SliceStable(g.Edges, func(i, j int) bool {
		return edgeOrder(g.Edges[i]) < edgeOrder(g.Edges[j])
	})
	for i, e := range g.Edges {
		e.Index = i
	}
}

func edgeOrder(e *Edge) int {
	if e.From == nil {
		return 1 << 30
	}
	return e.From.Index
}

// internal reports whether a jump or call goes somewhere in the regions.
// A call to the function's own entry is recursion, a call like any
// other; a call elsewhere into the function is a jump that pushes a
// return address, as return-stack stuffing does.
func (g *CFG) internal(in Inst) bool {
	switch in.flow {
	case flowBranch, flowJump:
		return g.region(in.target) >= 0
	case flowCall:
		return g.region(in.target) >= 0 && in.target != g.Regions[0].Addr
	}
	return false
}

// region returns the index of the region holding addr, or -1.
func (g *CFG) region(addr uint64) int {
	for i := range g.Regions {
		if g.Regions[i].contains(addr) {
			return i
		}
	}
	return -1
}

// label names an address in the regions as "name+0x1f".
func (g *CFG) label(addr uint64) string {
	r := &g.Regions[g.region(addr)]
	if addr == r.Addr {
		return r.Name
	}
	return fmt.Sprintf("%s+%#x", r.Name, addr-r.Addr)
}

// Label names a block by where it starts: "vfs_read+0x2f".
func (g *CFG) Label(b *Block) string { return g.label(b.Start) }

// Offset is the block's offset into its region's symbol.
func (g *CFG) Offset(b *Block) uint64 { return b.Start - g.Regions[b.Region].Addr }
