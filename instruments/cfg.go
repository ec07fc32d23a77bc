package instruments

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/arch/x86/x86asm"
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

// ErrSplit marks code that cannot be split into basic blocks.
var ErrSplit = errors.New("cannot split into basic blocks")

// splitError says why a function cannot be split into basic blocks.
type splitError struct{ fn, why string }

func (e *splitError) Error() string        { return "cannot split " + e.fn + " into basic blocks: " + e.why }
func (e *splitError) Is(target error) bool { return target == ErrSplit }

// SymLookup names an address outside the regions: the symbol starting
// exactly there and its address, or "" when none does.
type SymLookup func(addr uint64) (name string, base uint64)

// BuildCFG decodes the regions, of which the first is the function and
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
func BuildCFG(regions []Region, sym SymLookup) (*CFG, error) {
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
					return nil, &splitError{regions[0].Name, fmt.Sprintf("the %s at %s goes to %s, inside an instruction", mnemonic(in.Text), g.label(in.Addr), g.label(in.target))}
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

func mnemonic(text string) string {
	m, _, _ := strings.Cut(text, " ")
	return m
}

// decodeRegion decodes a region from its first byte to its last.
func decodeRegion(r Region, name x86asm.SymLookup) ([]Inst, error) {
	var insts []Inst
	for off := 0; off < len(r.Code); {
		addr := r.Addr + uint64(off)
		in, err := decodeInst(r.Code[off:], addr, name)
		if err != nil {
			end := min(off+8, len(r.Code))
			return nil, &splitError{r.Name, fmt.Sprintf("cannot decode the instruction at %s+%#x (% x): %v", r.Name, off, r.Code[off:end], err)}
		}
		insts = append(insts, in)
		off += in.Len
	}
	return insts, nil
}

// decodeInst decodes the instruction at the start of code, which is at
// addr. x86asm knows no instruction newer than AVX, and reads some it
// does not know as a bare prefix with no error; those the kernel uses
// are decoded by hand.
func decodeInst(code []byte, addr uint64, name x86asm.SymLookup) (Inst, error) {
	if text, n, ok := decodeSystem(code); ok {
		return Inst{Addr: addr, Len: n, Text: text}, nil
	}
	x, err := x86asm.Decode(code, 64)
	if err != nil {
		return Inst{}, err
	}
	if x.Op == 0 {
		return Inst{}, errors.New("unknown instruction")
	}
	in := Inst{Addr: addr, Len: x.Len, Text: x86asm.GNUSyntax(x, addr, name)}
	rel, isRel := x.Args[0].(x86asm.Rel)
	if isRel {
		in.target = addr + uint64(x.Len) + uint64(int64(rel))
	}
	switch x.Op {
	case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JCXZ, x86asm.JE, x86asm.JECXZ,
		x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP,
		x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JRCXZ, x86asm.JS,
		x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		in.flow = flowBranch
	case x86asm.JMP:
		in.flow = flowJump
		if !isRel {
			in.flow = flowIndirect
		}
	case x86asm.LJMP:
		in.flow = flowIndirect
	case x86asm.CALL:
		if isRel {
			in.flow = flowCall
		}
	case x86asm.RET, x86asm.LRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ, x86asm.SYSRET, x86asm.SYSEXIT:
		in.flow = flowReturn
	case x86asm.INT:
		if imm, ok := x.Args[0].(x86asm.Imm); ok && imm == 3 && x.Len == 1 {
			in.flow, in.pad = flowTrap, true
		}
	case x86asm.NOP:
		in.pad = true
	}
	return in, nil
}

// systemInsns are register forms of 0f 01 that the kernel uses and
// x86asm does not decode; every one is three bytes after any prefixes.
var systemInsns = map[byte]string{
	0xc0: "enclv", 0xc1: "vmcall", 0xc2: "vmlaunch", 0xc3: "vmresume", 0xc4: "vmxoff",
	0xc5: "pconfig", 0xc6: "wrmsrns", 0xca: "clac", 0xcb: "stac", 0xcf: "encls",
	0xd4: "vmfunc", 0xd5: "xend", 0xd6: "xtest", 0xd7: "enclu",
	0xd8: "vmrun", 0xd9: "vmmcall", 0xda: "vmload", 0xdb: "vmsave",
	0xdc: "stgi", 0xdd: "clgi", 0xde: "skinit", 0xdf: "invlpga",
	0xe8: "serialize", 0xee: "rdpkru", 0xef: "wrpkru",
	0xfa: "monitorx", 0xfb: "mwaitx", 0xfc: "clzero", 0xfd: "rdpru",
	0xfe: "invlpgb", 0xff: "tlbsync",
}

// decodeSystem decodes the instructions x86asm misses: endbr64 and
// endbr32, rdpid, rdrand and rdseed with REX.W, rdssp, lkgs, tpause,
// umwait, umonitor and the 0f 01 forms above.
func decodeSystem(code []byte) (text string, n int, ok bool) {
	i := 0
	var f2, f3, opsize, rexW bool
	rexB := 0
prefixes:
	for ; i < len(code) && i < 14; i++ {
		switch c := code[i]; {
		case c == 0xf3:
			f3 = true
		case c == 0xf2:
			f2 = true
		case c == 0x66:
			opsize = true
		case c == 0x2e || c == 0x3e || c == 0x26 || c == 0x36 || c == 0x64 || c == 0x65 || c == 0xf0:
		case c >= 0x40 && c <= 0x4f: // REX; B extends modrm.rm
			rexW, rexB = c&8 != 0, int(c&1)<<3
		default:
			break prefixes
		}
	}
	if i+3 > len(code) || code[i] != 0x0f {
		return "", 0, false
	}
	op, modrm := code[i+1], code[i+2]
	if op == 0x01 {
		if name, ok := systemInsns[modrm]; ok {
			return name, i + 3, true
		}
		return "", 0, false
	}
	if modrm < 0xc0 { // the rest are register forms
		return "", 0, false
	}
	reg, reg32 := "%"+gpr64[rexB|int(modrm&7)], "%"+gpr32[rexB|int(modrm&7)]
	if !rexW {
		reg = reg32
	}
	switch ext := modrm >> 3 & 7; {
	case op == 0x1e && f3 && modrm == 0xfa:
		return "endbr64", i + 3, true
	case op == 0x1e && f3 && modrm == 0xfb:
		return "endbr32", i + 3, true
	case op == 0x1e && f3 && ext == 1:
		return "rdssp " + reg, i + 3, true
	case op == 0xc7 && f3 && ext == 7:
		return "rdpid %" + gpr64[rexB|int(modrm&7)], i + 3, true
	case op == 0xc7 && !f3 && ext == 6:
		return "rdrand " + reg, i + 3, true
	case op == 0xc7 && !f3 && ext == 7:
		return "rdseed " + reg, i + 3, true
	case op == 0x00 && f2 && ext == 6:
		return "lkgs %" + gpr16[rexB|int(modrm&7)], i + 3, true
	case op == 0xae && opsize && ext == 6:
		return "tpause " + reg32, i + 3, true
	case op == 0xae && f2 && ext == 6:
		return "umwait " + reg32, i + 3, true
	case op == 0xae && f3 && ext == 6:
		return "umonitor %" + gpr64[rexB|int(modrm&7)], i + 3, true
	}
	return "", 0, false
}

var (
	gpr64 = [16]string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}
	gpr32 = [16]string{"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi", "r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"}
	gpr16 = [16]string{"ax", "cx", "dx", "bx", "sp", "bp", "si", "di", "r8w", "r9w", "r10w", "r11w", "r12w", "r13w", "r14w", "r15w"}
)

// A Count is how many times a block or an edge ran, where it is known.
type Count struct {
	N     uint64
	Known bool
}

// Flow holds the counts of a CFG's blocks and edges.
type Flow struct {
	Blocks []Count // by Block.Index
	Edges  []Count // by Edge.Index
	// Unbalanced lists the blocks whose known counts contradict the flow
	// equations: calls were in flight while the probes were attached.
	Unbalanced []*Block
}

// Solve works out what the measured block counts imply. Flow is
// conserved: a block runs as often as control enters it along its
// incoming edges, and as often as it leaves along its outgoing ones
// (counting the entry, exits and unknown edges like any other). Any such
// equation with one unknown term determines it; Solve applies them
// until none does. Blocks whose count was not measured may be solved
// too.
func Solve(g *CFG, measured []Count) *Flow {
	f := &Flow{Blocks: append([]Count(nil), measured...), Edges: make([]Count, len(g.Edges))}
	for changed := true; changed; {
		changed = false
		for _, b := range g.Blocks {
			changed = f.solve(b, b.In) || changed
			changed = f.solve(b, b.Out) || changed
		}
	}
	for _, b := range g.Blocks {
		if !f.balanced(b, b.In) || !f.balanced(b, b.Out) {
			f.Unbalanced = append(f.Unbalanced, b)
		}
	}
	return f
}

// solve applies count(b) = Σ count(edges) when it has one unknown term,
// or when the known terms leave nothing for the unknown edges, which
// then ran no times.
func (f *Flow) solve(b *Block, edges []*Edge) bool {
	var sum uint64
	var unknown []*Edge
	for _, e := range edges {
		if c := f.Edges[e.Index]; c.Known {
			sum += c.N
		} else {
			unknown = append(unknown, e)
		}
	}
	bc := &f.Blocks[b.Index]
	switch {
	case !bc.Known && len(unknown) == 0:
		*bc = Count{N: sum, Known: true}
		return true
	case bc.Known && len(unknown) > 0 && sum == bc.N:
		for _, e := range unknown {
			f.Edges[e.Index] = Count{Known: true}
		}
		return true
	case bc.Known && len(unknown) == 1 && sum < bc.N:
		f.Edges[unknown[0].Index] = Count{N: bc.N - sum, Known: true}
		return true
	}
	return false
}

func (f *Flow) balanced(b *Block, edges []*Edge) bool {
	var sum uint64
	for _, e := range edges {
		c := f.Edges[e.Index]
		if !c.Known {
			return true
		}
		sum += c.N
	}
	bc := f.Blocks[b.Index]
	return !bc.Known || bc.N == sum
}
