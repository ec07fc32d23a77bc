package cfg

import "strconv"

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

// String is the count in decimal, or "?" where it is not known.
func (c Count) String() string {
	if !c.Known {
		return "?"
	}
	return strconv.FormatUint(c.N, 10)
}
