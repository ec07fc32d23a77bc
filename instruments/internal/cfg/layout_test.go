package cfg_test

import (
	"strings"
	"testing"

	"kinst.dev/kinst/instruments/internal/cfg"
	"kinst.dev/kinst/instruments/internal/cfg/cfgtest"
)

// order names a layout's blocks as the graph's labels.
func order(g *cfg.CFG, bs []*cfg.Block) string {
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
			g, f := cfgtest.Synthetic(t, tc.blocks, tc.edges...)
			l := cfg.ProposeLayout(g, f)
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
	g, f := cfgtest.Synthetic(t, "A B C", ">A:10", "A>B:6", "A>C:4", "B>:6", "C>:4")
	f.Edges[2] = cfg.Count{}
	f.Blocks[2] = cfg.Count{}
	l := cfg.ProposeLayout(g, f)
	if got, want := order(g, l.Order), "f f+0x10 f+0x20"; got != want || l.Unknown != 1 || l.Transitions != 6 || l.Proposed != 6 || len(l.Cold) != 0 {
		t.Errorf("order %s, %d unknown, %d transitions, %d proposed, %d cold; want %s, 1, 6, 6, 0", got, l.Unknown, l.Transitions, l.Proposed, len(l.Cold), want)
	}
}
