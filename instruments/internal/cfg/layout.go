package cfg

import (
	"cmp"
	"slices"
)

// A Layout is an order of a function's blocks proposed from measured
// counts, with what it gains.
type Layout struct {
	// Order holds every block: the hot part (blocks that ran, or whose
	// count is unknown) chain by chain, then the cold blocks.
	Order []*Block
	// Cold lists the blocks that never ran, in their current order.
	Cold []*Block
	// Transitions is the number of times control passed from one block
	// to another along edges of known count; Current and Proposed are
	// how many of those fall through in the current and proposed order.
	Transitions, Current, Proposed uint64
	// Unknown counts the edges between blocks whose count the
	// measurements leave undetermined, which take no part.
	Unknown int
}

// ProposeLayout orders the blocks so that the most frequent transitions
// fall through, by chain formation in the manner of Pettis and Hansen:
// every block starts as a chain of its own; the edges between blocks,
// most frequent first (ties in edge order), join the chain ending in
// the edge's source to the chain starting at its destination, unless
// they are one chain or the destination is the function's entry, which
// stays first. The chain holding the entry comes first, then the other
// chains that ran, the most executed block first (ties in current
// order), then the cold blocks, which never ran, in their current
// order.
func ProposeLayout(g *CFG, f *Flow) *Layout {
	l := &Layout{}
	// Chains are linked lists of blocks, named by the index of the
	// block they started from.
	next := make([]*Block, len(g.Blocks))
	chain := make([]int, len(g.Blocks))
	first := make([]*Block, len(g.Blocks))
	last := make([]*Block, len(g.Blocks))
	for _, b := range g.Blocks {
		chain[b.Index], first[b.Index], last[b.Index] = b.Index, b, b
	}
	var edges []*Edge
	for _, e := range g.Edges {
		if e.From == nil || e.To == nil {
			continue
		}
		c := f.Edges[e.Index]
		if !c.Known {
			l.Unknown++
			continue
		}
		l.Transitions += c.N
		if c.N > 0 {
			edges = append(edges, e)
		}
	}
	slices.SortStableFunc(edges, func(a, b *Edge) int { return cmp.Compare(f.Edges[b.Index].N, f.Edges[a.Index].N) })
	entry := g.Blocks[0]
	for _, e := range edges {
		cf, ct := chain[e.From.Index], chain[e.To.Index]
		if cf == ct || last[cf] != e.From || first[ct] != e.To || e.To == entry {
			continue
		}
		next[e.From.Index] = e.To
		last[cf] = last[ct]
		for b := e.To; b != nil; b = next[b.Index] {
			chain[b.Index] = cf
		}
	}
	var chains []*Block // their first blocks, in current order
	for _, b := range g.Blocks {
		if first[chain[b.Index]] == b {
			chains = append(chains, b)
		}
	}
	cold := func(b *Block) bool { c := f.Blocks[b.Index]; return c.Known && c.N == 0 }
	weight := func(h *Block) (w uint64) {
		for b := h; b != nil; b = next[b.Index] {
			if c := f.Blocks[b.Index]; c.Known {
				w = max(w, c.N)
			}
		}
		return w
	}
	slices.SortStableFunc(chains, func(a, b *Block) int {
		switch entry {
		case a:
			return -1
		case b:
			return 1
		}
		return cmp.Compare(weight(b), weight(a))
	})
	for _, h := range chains {
		for b := h; b != nil; b = next[b.Index] {
			if !cold(b) {
				l.Order = append(l.Order, b)
			}
		}
	}
	for _, b := range g.Blocks {
		if cold(b) {
			l.Cold = append(l.Cold, b)
			l.Order = append(l.Order, b)
		}
	}
	l.Current = fallThrough(g, f, g.Blocks, true)
	l.Proposed = fallThrough(g, f, l.Order, false)
	return l
}

// fallThrough sums the known counts of the edges whose destination
// directly follows their source in order; in the code as it is, blocks
// of different regions are apart however they are listed.
func fallThrough(g *CFG, f *Flow, order []*Block, sameRegion bool) uint64 {
	pos := make([]int, len(g.Blocks))
	for i, b := range order {
		pos[b.Index] = i
	}
	var n uint64
	for _, e := range g.Edges {
		if e.From == nil || e.To == nil || !f.Edges[e.Index].Known || pos[e.To.Index] != pos[e.From.Index]+1 {
			continue
		}
		if sameRegion && e.From.Region != e.To.Region {
			continue
		}
		n += f.Edges[e.Index].N
	}
	return n
}
