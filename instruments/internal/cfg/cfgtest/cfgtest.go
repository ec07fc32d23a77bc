// Package cfgtest builds control-flow graphs for tests: that of a
// small function's machine code, and synthetic ones written as text.
package cfgtest

import (
	"fmt"
	"strings"
	"testing"

	"kinst.dev/kinst/instruments/internal/cfg"
)

// loopCode is an if/else followed by a counted loop:
//
//	f:      endbr64; nopl (the ftrace site); test %edi,%edi; je else
//	        mov $1,%eax; jmp loop
//	else:   mov $2,%eax
//	loop:   dec %eax; jne loop
//	        ret; int3; int3
var loopCode = []byte{
	0xf3, 0x0f, 0x1e, 0xfa, // 0x00 endbr64
	0x0f, 0x1f, 0x44, 0x00, 0x00, // 0x04 nopl 0x0(%rax,%rax,1)
	0x85, 0xff, // 0x09 test %edi,%edi
	0x74, 0x07, // 0x0b je 0x14
	0xb8, 0x01, 0x00, 0x00, 0x00, // 0x0d mov $1,%eax
	0xeb, 0x05, // 0x12 jmp 0x19
	0xb8, 0x02, 0x00, 0x00, 0x00, // 0x14 mov $2,%eax
	0xff, 0xc8, // 0x19 dec %eax
	0x75, 0xfc, // 0x1b jne 0x19
	0xc3,       // 0x1d ret
	0xcc, 0xcc, // 0x1e padding
}

// Loop is the graph of an if/else followed by a counted loop, at
// 0x1000 in f: loopCode.
func Loop(t testing.TB) *cfg.CFG {
	t.Helper()
	g, err := cfg.Build([]cfg.Region{{Name: "f", Addr: 0x1000, Code: loopCode}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Synthetic builds a graph from its blocks' names, 16 bytes each, laid
// out in f (at 0x1000) or, for names ending in "!", in f.cold (at
// 0x2000), and its edges written "A>B:N" (N times from A to B), ">A:N"
// (the entry) or "A>:N" (an exit). It returns the graph with its flow,
// the blocks' counts summed from the edges into them.
func Synthetic(t testing.TB, blocks string, edges ...string) (*cfg.CFG, *cfg.Flow) {
	t.Helper()
	g := &cfg.CFG{Regions: []cfg.Region{{Name: "f", Addr: 0x1000}, {Name: "f.cold", Addr: 0x2000}}}
	byName := map[string]*cfg.Block{}
	for _, name := range strings.Fields(blocks) {
		r := 0
		if strings.HasSuffix(name, "!") {
			r = 1
		}
		reg := &g.Regions[r]
		b := &cfg.Block{Index: len(g.Blocks), Region: r, Start: reg.Addr + uint64(len(reg.Code))}
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
		e := &cfg.Edge{Index: len(g.Edges), From: byName[from], To: byName[to], Kind: cfg.EdgeTaken}
		switch {
		case from == "":
			e.Kind = cfg.EdgeEntry
		case to == "":
			e.Kind = cfg.EdgeExit
		case e.To.Start == e.From.End:
			e.Kind = cfg.EdgeFall
		}
		g.Edges = append(g.Edges, e)
		if e.From != nil {
			e.From.Out = append(e.From.Out, e)
		}
		if e.To != nil {
			e.To.In = append(e.To.In, e)
		}
		ns = append(ns, n)
	}
	f := &cfg.Flow{Blocks: make([]cfg.Count, len(g.Blocks)), Edges: make([]cfg.Count, len(g.Edges))}
	for i, e := range g.Edges {
		f.Edges[i] = cfg.Count{N: ns[i], Known: true}
		if e.To != nil {
			f.Blocks[e.To.Index].N += ns[i]
			f.Blocks[e.To.Index].Known = true
		}
	}
	return g, f
}
