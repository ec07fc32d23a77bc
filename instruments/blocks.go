package instruments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst"
	"kinst.dev/kinst/instruments/internal/cfg"
	"kinst.dev/kinst/kernel"
)

func init() {
	register(&Command{
		Name:    "blocks",
		Summary: "count how often each basic block of a kernel function runs, and the edges between them",
		Run:     blocks,
	})
}

func blocks(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	fs := c.flags("blocks", stderr,
		"usage: kinst blocks FUNC [--layout] [--pid PID] [--comm NAME] [-c CMD] [--duration D] [-o FILE] [-f text|json] [-q] [--show]",
	)
	layout := fs.Bool("layout", false, "propose the block order that makes the measured transitions fall through most")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError("name one kernel function")
	}
	fn, err := blocksFunction(pos[0])
	if err != nil {
		return usageError("%v", err)
	}
	g, err := functionCFG(fn)
	if err != nil {
		return err
	}
	refused := make([]error, len(g.Blocks))
	if !c.Show {
		if st := kernel.Probe(kernel.FeatKprobe); !st.Available {
			return fmt.Errorf("cannot count the blocks of %s: %s", fn, st.Reason)
		}
		if refused, err = checkBlocks(g); err != nil {
			return fmt.Errorf("cannot count the blocks of %s: %w", fn, err)
		}
	}
	hooks := runHooks{ExitMaps: func(w io.Writer, maps []*kinst.Map) error {
		r := newBlockReport(g, refused, maps)
		if *layout {
			if err := r.propose(); err != nil {
				return err
			}
		}
		if c.Format == "json" {
			return r.writeJSON(w)
		}
		return r.writeText(w, c.Quiet)
	}}
	return c.run(ctx, "blocks", blocksProgram(&c, g, refused), hooks, stdout, stderr)
}

// blocksFunction reads the kernel function a target names.
func blocksFunction(spec string) (string, error) {
	t, err := parseTarget(spec)
	if err != nil {
		return "", err
	}
	if !t.Kernel {
		return "", fmt.Errorf("%s is not a kernel function: blocks reads the kernel's own code", spec)
	}
	_, fn, _ := strings.Cut(t.Entry, ":")
	if strings.ContainsAny(fn, "+:*?") {
		return "", fmt.Errorf("%s: name a kernel function alone, without a module, an offset or a wildcard", spec)
	}
	return fn, nil
}

// functionCFG reads a kernel function's code from the running kernel,
// with the parts the compiler outlined (FUNC.cold) that it jumps to, and
// builds its control-flow graph.
func functionCFG(name string) (*cfg.CFG, error) {
	ks, err := kernel.LoadKallsyms()
	if err != nil {
		return nil, err
	}
	text, err := kernel.FuncText(name)
	if errors.Is(err, kernel.ErrNoFunction) {
		return nil, fmt.Errorf("kernel function %s does not exist", name)
	}
	if err != nil {
		return nil, err
	}
	regions := []cfg.Region{{Name: name, Addr: text.Sym.Addr, Code: text.Code}}
	targets, err := cfg.JumpsOut(regions[0])
	if err != nil {
		return nil, err
	}
	seen := map[uint64]bool{}
	for _, addr := range targets {
		s, _, ok := ks.Lookup(addr)
		if !ok || seen[s.Addr] || !strings.HasPrefix(s.Name, name+".cold") {
			continue
		}
		seen[s.Addr] = true
		cold, err := kernel.SymText(s)
		if err != nil {
			return nil, err
		}
		regions = append(regions, cfg.Region{Name: s.Name, Addr: s.Addr, Code: cold.Code})
	}
	return cfg.Build(regions, func(addr uint64) (string, uint64) {
		if s, off, ok := ks.Lookup(addr); ok && off == 0 && s.IsFunc() {
			return s.Name, addr
		}
		return "", 0
	})
}

// checkBlocks asks the kernel which block starts it lets a kprobe reach,
// and returns the refusal for each block it does not.
func checkBlocks(g *cfg.CFG) ([]error, error) {
	refused := make([]error, len(g.Blocks))
	for ri, r := range g.Regions {
		var idx []int
		var offs []uint64
		for _, b := range g.Blocks {
			if b.Region == ri {
				idx = append(idx, b.Index)
				offs = append(offs, g.Offset(b))
			}
		}
		errs, err := kernel.CheckKprobes(r.Name, offs)
		if err != nil {
			return nil, err
		}
		for i, e := range errs {
			refused[idx[i]] = e
		}
	}
	for _, e := range refused {
		if e == nil {
			return refused, nil
		}
	}
	return nil, fmt.Errorf("the kernel refuses kprobes at all %d of its blocks: %w", len(g.Blocks), refused[0])
}

// blocksProgram is the kinst program that counts each block: one kprobe
// at the start of every block the kernel accepts.
func blocksProgram(c *common, g *cfg.CFG, refused []error) string {
	var points []string
	for _, b := range g.Blocks {
		if refused[b.Index] == nil {
			points = append(points, blockProbe(g, b))
		}
	}
	var sb strings.Builder
	sb.WriteString(strings.Join(points, ",\n"))
	if cond := c.predicate(); cond != "" {
		sb.WriteString("\n/" + cond + "/")
	}
	sb.WriteString("\n{\n\t@[probe] = count();\n}\n")
	sb.WriteString(c.stop())
	return sb.String()
}

// blockProbe is the probe at a block's start, as the probe builtin names it.
func blockProbe(g *cfg.CFG, b *cfg.Block) string { return "kprobe:" + g.Label(b) }

// blockReport is what blocks prints: the graph, the counts measured and
// solved, and why blocks were not probed.
type blockReport struct {
	g       *cfg.CFG
	f       *cfg.Flow
	refused []error
	layout  *cfg.Layout // with --layout
}

// propose computes the layout, which needs the function to have run.
func (r *blockReport) propose() error {
	if c := r.calls(); c.Known && c.N == 0 {
		return fmt.Errorf("%s did not run while its blocks were counted: no layout to propose", r.g.Regions[0].Name)
	}
	r.layout = cfg.ProposeLayout(r.g, r.f)
	return nil
}

func newBlockReport(g *cfg.CFG, refused []error, maps []*kinst.Map) *blockReport {
	hits := map[string]uint64{}
	for _, m := range maps {
		if m.Name != "@" {
			continue
		}
		for _, e := range m.Entries {
			probe, _ := e.Key[0].(string)
			hits[probe], _ = e.Value.(uint64)
		}
	}
	measured := make([]cfg.Count, len(g.Blocks))
	for _, b := range g.Blocks {
		if refused[b.Index] == nil {
			measured[b.Index] = cfg.Count{N: hits[blockProbe(g, b)], Known: true}
		}
	}
	return &blockReport{g: g, f: cfg.Solve(g, measured), refused: refused}
}

// calls is the entry edge's count.
func (r *blockReport) calls() cfg.Count {
	for _, e := range r.g.Blocks[0].In {
		if e.Kind == cfg.EdgeEntry {
			return r.f.Edges[e.Index]
		}
	}
	return cfg.Count{}
}

// refusal says in a few words why a block's start took no kprobe.
func (r *blockReport) refusal(b *cfg.Block) string {
	err := r.refused[b.Index]
	var kr *kernel.KprobeRefusal
	if !errors.As(err, &kr) {
		return err.Error()
	}
	if kr.Errno == unix.EINVAL {
		// The kernel's reasons for EINVAL are many; the instruction
		// tells which applies.
		switch first := b.Insts[0]; {
		case first.Mnemonic() == "ud2":
			return "the kernel does not probe BUG and WARN sites (ud2) (EINVAL)"
		case first.Nop() && (first.Len == 2 || first.Len == 5):
			return "the kernel does not probe jump labels and static calls, which this nop is (EINVAL)"
		}
	}
	return kr.Why
}

func (r *blockReport) writeText(w io.Writer, quiet bool) error {
	g, f := r.g, r.f
	probed := 0
	for _, e := range r.refused {
		if e == nil {
			probed++
		}
	}
	main := g.Regions[0]
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s at %#x, %d bytes", main.Name, main.Addr, len(main.Code))
	for _, cold := range g.Regions[1:] {
		fmt.Fprintf(&sb, ", and %s at %#x, %d bytes", cold.Name, cold.Addr, len(cold.Code))
	}
	fmt.Fprintf(&sb, ": %d blocks, %d probed, %s calls\n", len(g.Blocks), probed, r.calls())
	if r.layout != nil {
		if _, err := io.WriteString(w, sb.String()); err != nil {
			return err
		}
		return writeLayout(w, r)
	}

	width := len("count")
	for _, c := range f.Blocks {
		width = max(width, len(c.String())+2)
	}
	offWidth := 0
	for ri, insts := range g.Insts {
		for _, in := range insts {
			offWidth = max(offWidth, len(fmt.Sprintf("+%#x", in.Addr-g.Regions[ri].Addr)))
		}
	}
	pad := strings.Repeat(" ", width+2+offWidth+2)
	starts := map[uint64]*cfg.Block{}
	for _, b := range g.Blocks {
		starts[b.Start] = b
	}
	inferred := false
	for ri, insts := range g.Insts {
		region := &g.Regions[ri]
		fmt.Fprintf(&sb, "\n%*s  %s:\n", width, "count", region.Name)
		var cur *cfg.Block
		padOff, padLen := "", 0
		// A blank line separates blocks, and padding from blocks.
		started := false
		separate := func() {
			if started {
				sb.WriteByte('\n')
			}
			started = true
		}
		flush := func() {
			if padLen > 0 && !quiet {
				separate()
				fmt.Fprintf(&sb, "%*s  %-*s  (%d bytes of padding)\n", width, "", offWidth, padOff, padLen)
			}
			padLen = 0
		}
		for _, in := range insts {
			if b := starts[in.Addr]; b != nil {
				cur = b
			} else if cur != nil && in.Addr >= cur.End {
				cur = nil
			}
			off := fmt.Sprintf("+%#x", in.Addr-region.Addr)
			if cur == nil {
				if padLen == 0 {
					padOff = off
				}
				padLen += in.Len
				continue
			}
			flush()
			first := in.Addr == cur.Start
			last := in.Addr+uint64(in.Len) == cur.End
			if first {
				separate()
				if r.refused[cur.Index] != nil {
					fmt.Fprintf(&sb, "%s; not probed: %s\n", pad, r.refusal(cur))
				}
				for _, e := range cur.In {
					if e.Kind == cfg.EdgeUnknown {
						fmt.Fprintf(&sb, "%s<- %s: %s\n", pad, e.Note, f.Edges[e.Index])
					}
				}
				count := f.Blocks[cur.Index].String()
				if r.refused[cur.Index] != nil && f.Blocks[cur.Index].Known {
					count = "(" + count + ")"
					inferred = true
				}
				fmt.Fprintf(&sb, "%*s  %-*s  %s\n", width, count, offWidth, off, in.Text)
			} else if !quiet {
				fmt.Fprintf(&sb, "%*s  %-*s  %s\n", width, "", offWidth, off, in.Text)
			}
			if last {
				fmt.Fprintf(&sb, "%s-> %s\n", pad, r.successors(cur))
			}
		}
		flush()
	}
	if inferred {
		fmt.Fprintf(&sb, "\n(N): a block not probed, whose count the edges determine\n")
	}
	if n := len(f.Unbalanced); n > 0 {
		fmt.Fprintf(&sb, "\nnote: the counts of %d blocks do not balance, the first at %s: the function ran while the probes were being attached or removed; -c counts exactly\n",
			n, g.Label(f.Unbalanced[0]))
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// successors describes a block's outgoing edges: "+0x2f: 10, return: 3".
func (r *blockReport) successors(b *cfg.Block) string {
	var parts []string
	for _, e := range b.Out {
		dest := e.Note
		if e.To != nil {
			dest = r.g.Label(e.To)
			if e.To.Region == b.Region {
				dest = fmt.Sprintf("+%#x", r.g.Offset(e.To))
			}
		}
		parts = append(parts, dest+": "+r.f.Edges[e.Index].String())
	}
	if len(parts) == 0 {
		return "nowhere"
	}
	return strings.Join(parts, ", ")
}

// writeJSON prints the report as one JSON document: the function, its
// blocks with their instructions (offsets into their symbol), the edges
// between them by block index (null outside the function), the counts
// (null where unknown), and the proposed layout with --layout.
func (r *blockReport) writeJSON(out io.Writer) error {
	g := r.g
	w := jsonWriter{compact: true}
	count := func(c cfg.Count) {
		if c.Known {
			w.uint(c.N)
		} else {
			w.null()
		}
	}
	block := func(b *cfg.Block) {
		if b == nil {
			w.null()
		} else {
			w.int(int64(b.Index))
		}
	}
	blocks := func(list []*cfg.Block) {
		w.open('[')
		for _, b := range list {
			block(b)
		}
		w.close(']')
	}
	w.open('{')
	w.key("function")
	w.str(g.Regions[0].Name)
	w.key("address")
	w.uint(g.Regions[0].Addr)
	w.key("size")
	w.int(int64(len(g.Regions[0].Code)))
	w.key("calls")
	count(r.calls())
	w.key("blocks")
	w.open('[')
	for i, b := range g.Blocks {
		base := g.Regions[b.Region].Addr
		w.open('{')
		w.key("symbol")
		w.str(g.Regions[b.Region].Name)
		w.key("start")
		w.uint(b.Start - base)
		w.key("end")
		w.uint(b.End - base)
		w.key("count")
		count(r.f.Blocks[i])
		w.key("probed")
		w.bool(r.refused[i] == nil)
		if r.refused[i] != nil {
			w.key("reason")
			w.str(r.refusal(b))
		}
		w.key("instructions")
		w.open('[')
		for _, in := range b.Insts {
			w.open('{')
			w.key("offset")
			w.uint(in.Addr - base)
			w.key("text")
			w.str(in.Text)
			w.close('}')
		}
		w.close(']')
		w.close('}')
	}
	w.close(']')
	w.key("edges")
	w.open('[')
	for i, e := range g.Edges {
		w.open('{')
		w.key("from")
		block(e.From)
		w.key("to")
		block(e.To)
		w.key("kind")
		w.str(e.Kind.String())
		if e.Note != "" {
			w.key("note")
			w.str(e.Note)
		}
		w.key("count")
		count(r.f.Edges[i])
		w.close('}')
	}
	w.close(']')
	w.key("unbalanced")
	blocks(r.f.Unbalanced)
	if l := r.layout; l != nil {
		// Transitions, and those that fall through now and in the
		// proposed order.
		w.key("layout")
		w.open('{')
		w.key("transitions")
		w.uint(l.Transitions)
		w.key("current")
		w.uint(l.Current)
		w.key("proposed")
		w.uint(l.Proposed)
		w.key("order")
		blocks(l.Order)
		w.key("cold")
		blocks(l.Cold)
		w.close('}')
	}
	w.close('}')
	_, err := out.Write(append(w.b, '\n'))
	return err
}
