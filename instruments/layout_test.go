package instruments

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// synthetic builds a graph from its blocks' names, 16 bytes each, laid
// out in f (at 0x1000) or, for names ending in "!", in f.cold (at
// 0x2000), and its edges written "A>B:N" (N times from A to B), ">A:N"
// (the entry) or "A>:N" (an exit). It returns the graph with its flow,
// the blocks' counts summed from the edges into them.
func synthetic(t *testing.T, blocks string, edges ...string) (*CFG, *Flow) {
	t.Helper()
	g := &CFG{Regions: []Region{{Name: "f", Addr: 0x1000}, {Name: "f.cold", Addr: 0x2000}}}
	byName := map[string]*Block{}
	for _, name := range strings.Fields(blocks) {
		r := 0
		if strings.HasSuffix(name, "!") {
			r = 1
		}
		reg := &g.Regions[r]
		b := &Block{Index: len(g.Blocks), Region: r, Start: reg.Addr + uint64(len(reg.Code))}
		b.End = b.Start + 16
		reg.Code = append(reg.Code, make([]byte, 16)...)
		g.Blocks = append(g.Blocks, b)
		byName[name] = b
	}
	var ns []uint64
	for _, spec := range edges {
		var from, to string
		var n uint64
		ends, count, _ := strings.Cut(spec, ":")
		from, to, _ = strings.Cut(ends, ">")
		if _, err := fmt.Sscan(count, &n); err != nil {
			t.Fatalf("edge %q: %v", spec, err)
		}
		e := &Edge{Index: len(g.Edges), From: byName[from], To: byName[to], Kind: EdgeTaken}
		switch {
		case from == "":
			e.Kind = EdgeEntry
		case to == "":
			e.Kind = EdgeExit
		case e.To.Start == e.From.End:
			e.Kind = EdgeFall
		}
		g.addEdge(e)
		ns = append(ns, n)
	}
	f := &Flow{Blocks: make([]Count, len(g.Blocks)), Edges: make([]Count, len(g.Edges))}
	for i, e := range g.Edges {
		f.Edges[i] = Count{N: ns[i], Known: true}
		if e.To != nil {
			f.Blocks[e.To.Index].N += ns[i]
			f.Blocks[e.To.Index].Known = true
		}
	}
	return g, f
}

// order names a layout's blocks as the graph's labels.
func order(g *CFG, bs []*Block) string {
	var names []string
	for _, b := range bs {
		names = append(names, g.Label(b))
	}
	return strings.Join(names, " ")
}

func TestProposeLayout(t *testing.T) {
	for _, tc := range []struct {
		name        string
		blocks      string
		edges       []string
		order, cold string
		// transitions, and those that fall through now and in the order
		total, current, proposed uint64
	}{
		{
			// The if/else before a loop of loopCode: the else branch,
			// taken more often, joins the entry, the loop and the
			// return; the then branch goes last.
			name:   "if else loop",
			blocks: "A B C D E",
			edges:  []string{">A:10", "A>C:7", "A>B:3", "B>D:3", "C>D:7", "D>D:15", "D>E:10", "E>:10"},
			order:  "f f+0x20 f+0x30 f+0x40 f+0x10",
			total:  45, current: 20, proposed: 24,
		},
		{
			// A>C, C>D and D>F form the entry's chain; E>F comes
			// too late for F, already joined; B>E makes a second
			// chain; X in f.cold never ran.
			name:   "chains and a cold part",
			blocks: "A B C D E F X!",
			edges: []string{">A:100", "A>B:5", "A>C:95", "B>X!:0", "B>E:5", "C>D:60", "C>E:35",
				"D>F:60", "E>F:40", "X!>E:0", "F>:100"},
			order: "f f+0x20 f+0x30 f+0x50 f+0x10 f+0x40 f.cold",
			cold:  "f.cold",
			total: 300, current: 105, proposed: 220,
		},
		{
			// A three-way branch: the chains left are ordered by
			// their counts, D (3) before B (2).
			name:   "chains by count",
			blocks: "A B C D",
			edges:  []string{">A:10", "A>B:2", "A>C:5", "A>D:3", "B>:2", "C>:5", "D>:3"},
			order:  "f f+0x20 f+0x30 f+0x10",
			total:  10, current: 2, proposed: 5,
		},
		{
			// The back edge to the entry comes first among equals,
			// but the entry must start the function.
			name:   "back edge to the entry",
			blocks: "A B C",
			edges:  []string{"B>A:9", ">A:1", "A>B:9", "A>C:1", "C>:1"},
			order:  "f f+0x10 f+0x20",
			total:  19, current: 9, proposed: 9,
		},
		{
			name:   "one block",
			blocks: "A",
			edges:  []string{">A:4", "A>:4"},
			order:  "f",
		},
		{
			// Only the entry ran: the rest is cold, as it is.
			name:   "early return",
			blocks: "A B C",
			edges:  []string{">A:4", "A>:4", "A>B:0", "B>C:0", "C>:0"},
			order:  "f f+0x10 f+0x20",
			cold:   "f+0x10 f+0x20",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, f := synthetic(t, tc.blocks, tc.edges...)
			l := ProposeLayout(g, f)
			if got := order(g, l.Order); got != tc.order {
				t.Errorf("order %s, want %s", got, tc.order)
			}
			if got := order(g, l.Cold); got != tc.cold {
				t.Errorf("cold %q, want %q", got, tc.cold)
			}
			if l.Transitions != tc.total || l.Current != tc.current || l.Proposed != tc.proposed {
				t.Errorf("%d transitions, %d falling through, %d proposed; want %d, %d, %d",
					l.Transitions, l.Current, l.Proposed, tc.total, tc.current, tc.proposed)
			}
		})
	}
}

// TestProposeLayoutUnknown leaves an edge's count unknown: it takes no
// part, and its destination, whose count is unknown, stays hot.
func TestProposeLayoutUnknown(t *testing.T) {
	g, f := synthetic(t, "A B C", ">A:10", "A>B:6", "A>C:4", "B>:6", "C>:4")
	f.Edges[2] = Count{}
	f.Blocks[2] = Count{}
	l := ProposeLayout(g, f)
	if got, want := order(g, l.Order), "f f+0x10 f+0x20"; got != want || l.Unknown != 1 || l.Transitions != 6 || l.Proposed != 6 || len(l.Cold) != 0 {
		t.Errorf("order %s, %d unknown, %d transitions, %d proposed, %d cold; want %s, 1, 6, 6, 0", got, l.Unknown, l.Transitions, l.Proposed, len(l.Cold), want)
	}
}

func TestBlocksLayoutText(t *testing.T) {
	g, f := synthetic(t, "A B C D E F X!", ">A:100", "A>B:5", "A>C:95", "B>X!:0", "B>E:5", "C>D:60", "C>E:35",
		"D>F:60", "E>F:40", "X!>E:0", "F>:100")
	r := &blockReport{g: g, f: f, refused: make([]error, len(g.Blocks))}
	if err := r.propose(); err != nil {
		t.Fatal(err)
	}
	want := `f at 0x1000, 96 bytes, and f.cold at 0x2000, 16 bytes: 7 blocks, 7 probed, 100 calls
fall-through: current 35%, proposed 73%
of 300 transitions between blocks
cold: 1 of 7 blocks never ran: f.cold
proposed order:
count  block
  100  +0x0
   95  +0x20
   60  +0x30
  100  +0x50
    5  +0x10
   40  +0x40

    0  f.cold
`
	var sb strings.Builder
	if err := r.writeText(&sb, false); err != nil {
		t.Fatal(err)
	}
	if sb.String() != want {
		t.Errorf("got\n%s\nwant\n%s", sb.String(), want)
	}
	sb.Reset()
	if err := r.writeJSON(&sb); err != nil {
		t.Fatal(err)
	}
	if want := `"layout":{"transitions":300,"current":105,"proposed":220,"order":[0,2,3,5,1,4,6],"cold":[6]}}` + "\n"; !strings.HasSuffix(sb.String(), want) {
		t.Errorf("JSON ends\n%s\nwant\n%s", sb.String()[max(0, sb.Len()-len(want)):], want)
	}
}

// TestBlocksLayoutNotRun refuses a layout for a function that did not run.
func TestBlocksLayoutNotRun(t *testing.T) {
	g, f := synthetic(t, "A B", ">A:0", "A>B:0", "B>:0")
	r := &blockReport{g: g, f: f, refused: make([]error, len(g.Blocks))}
	err := r.propose()
	if want := "f did not run while its blocks were counted: no layout to propose"; err == nil || err.Error() != want || !errors.Is(err, ErrNotRun) {
		t.Errorf("error %v, want %q", err, want)
	}
}
