package cfg_test

import (
	"fmt"
	"strings"
	"testing"

	"kinst.dev/kinst/instruments/internal/cfg"
	"kinst.dev/kinst/instruments/internal/cfg/cfgtest"
)

// describe prints a graph's blocks, with their instructions, and its
// edges, one a line.
func describe(g *cfg.CFG) string {
	var sb strings.Builder
	for _, b := range g.Blocks {
		fmt.Fprintf(&sb, "%s..+%#x:", g.Label(b), b.End-g.Regions[b.Region].Addr)
		for _, in := range b.Insts {
			fmt.Fprintf(&sb, " %s;", in.Text)
		}
		sb.WriteByte('\n')
	}
	for _, e := range g.Edges {
		from, to := "outside", "outside"
		if e.From != nil {
			from = g.Label(e.From)
		}
		if e.To != nil {
			to = g.Label(e.To)
		}
		fmt.Fprintf(&sb, "%s -> %s %s", from, to, e.Kind)
		if e.Note != "" {
			fmt.Fprintf(&sb, " (%s)", e.Note)
		}
		sb.WriteByte('\n')
	}
	return sb.String()
}

func TestBuildLoop(t *testing.T) {
	want := `f..+0xd: endbr64; nopl (%rax,%rax); test %edi,%edi; je f+0x14;
f+0xd..+0x14: mov $0x1,%eax; jmp f+0x19;
f+0x14..+0x19: mov $0x2,%eax;
f+0x19..+0x1d: dec %eax; jne f+0x19;
f+0x1d..+0x1e: retq;
f -> f+0x14 taken
f -> f+0xd fall
f+0xd -> f+0x19 taken
f+0x14 -> f+0x19 fall
f+0x19 -> f+0x19 taken
f+0x19 -> f+0x1d fall
f+0x1d -> outside exit (return)
outside -> f entry (call)
`
	if got := describe(cfgtest.Loop(t)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// exitsCode has a function f and its outlined part f.cold, with a
// recursive call, an indirect jump, a call that does not return, a tail
// call, a ud2 that goes on (a WARN), and int3 padding:
//
//	f:      nopl; test %rdi,%rdi; je f.cold
//	        call f; test %rax,%rax; jne 1f
//	        jmp *%rax; int3
//	1:      call g; int3
//	2:      jmp h; int3; int3
//	f.cold: ud2; jmp 2b
var (
	exitsCode = []byte{
		0x0f, 0x1f, 0x44, 0x00, 0x00, // 0x00 nopl
		0x48, 0x85, 0xff, // 0x05 test %rdi,%rdi
		0x0f, 0x84, 0xf2, 0x0f, 0x00, 0x00, // 0x08 je 0x2000
		0xe8, 0xed, 0xff, 0xff, 0xff, // 0x0e call 0x1000
		0x48, 0x85, 0xc0, // 0x13 test %rax,%rax
		0x75, 0x03, // 0x16 jne 0x101b
		0xff, 0xe0, // 0x18 jmp *%rax
		0xcc,                         // 0x1a int3
		0xe8, 0xe0, 0x1f, 0x00, 0x00, // 0x1b call 0x3000
		0xcc,                         // 0x20 int3
		0xe9, 0xda, 0x20, 0x00, 0x00, // 0x21 jmp 0x3100
		0xcc, 0xcc, // 0x26 padding
	}
	exitsCold = []byte{
		0x0f, 0x0b, // 0x00 ud2
		0xe9, 0x1a, 0xf0, 0xff, 0xff, // 0x02 jmp 0x1021
	}
)

func symbols(addr uint64) (string, uint64) {
	name := map[uint64]string{
		0x3000: "g",
		0x3100: "h",
		0x4000: "__x86_indirect_thunk_rax",
		0x4100: "__x86_return_thunk",
	}[addr]
	return name, addr
}

func TestBuildExits(t *testing.T) {
	g, err := cfg.Build([]cfg.Region{
		{Name: "f", Addr: 0x1000, Code: exitsCode},
		{Name: "f.cold", Addr: 0x2000, Code: exitsCold},
	}, symbols)
	if err != nil {
		t.Fatal(err)
	}
	want := `f..+0xe: nopl (%rax,%rax); test %rdi,%rdi; je f.cold;
f+0xe..+0x18: callq f; test %rax,%rax; jne f+0x1b;
f+0x18..+0x1a: jmp *%rax;
f+0x1b..+0x20: callq g;
f+0x21..+0x26: jmpq h;
f.cold..+0x7: ud2; jmpq f+0x21;
f -> f.cold taken
f -> f+0xe fall
f+0xe -> f+0x1b taken
f+0xe -> f+0x18 fall
f+0x18 -> outside unknown (indirect jump)
f+0x1b -> outside exit (the call does not return)
f+0x21 -> outside exit (tail call to h)
f.cold -> f+0x21 taken
outside -> f entry (call)
`
	if got := describe(g); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if n := len(g.Insts[0]); n != 13 {
		t.Errorf("f has %d instructions with its padding, want 13", n)
	}
}

func TestBuildThunks(t *testing.T) {
	code := []byte{
		0x85, 0xff, // 0x00 test %edi,%edi
		0x74, 0x05, // 0x02 je 0x1009
		0xe9, 0xf7, 0x2f, 0x00, 0x00, // 0x04 jmp 0x4000
		0xe9, 0xf2, 0x30, 0x00, 0x00, // 0x09 jmp 0x4100
		0xc3,             // 0x0e ret, which nothing reaches
		0x31, 0xc0, 0xc3, // 0x0f xor %eax,%eax; ret
	}
	g, err := cfg.Build([]cfg.Region{{Name: "t", Addr: 0x1000, Code: code}}, symbols)
	if err != nil {
		t.Fatal(err)
	}
	want := `t..+0x4: test %edi,%edi; je t+0x9;
t+0x4..+0x9: jmpq __x86_indirect_thunk_rax;
t+0x9..+0xe: jmpq __x86_return_thunk;
t+0xe..+0xf: retq;
t+0xf..+0x12: xor %eax,%eax; retq;
t -> t+0x9 taken
t -> t+0x4 fall
t+0x4 -> outside unknown (indirect jump through __x86_indirect_thunk_rax)
t+0x9 -> outside exit (return through __x86_return_thunk)
t+0xe -> outside exit (return)
t+0xf -> outside exit (return)
outside -> t+0xe unknown (entered in a way the code does not show)
outside -> t+0xf unknown (entered in a way the code does not show)
outside -> t entry (call)
`
	if got := describe(g); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestJumpsOut lists the direct jumps out of f, conditional or not,
// and leaves out its calls and the jumps within it.
func TestJumpsOut(t *testing.T) {
	got, err := cfg.JumpsOut(cfg.Region{Name: "f", Addr: 0x1000, Code: exitsCode})
	if want := []uint64{0x2000, 0x3100}; err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %#x, %v; want %#x", got, err, want)
	}
	_, err = cfg.JumpsOut(cfg.Region{Name: "f", Addr: 0x1000, Code: []byte{0x90, 0x06}})
	if want := "cannot split f into basic blocks: cannot decode the instruction at f+0x1 (06): unrecognized instruction"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		code []byte
		want string
	}{
		{"empty", nil, "cannot split f into basic blocks: no code"},
		{"into an instruction", []byte{0xeb, 0x01, 0xb8, 0, 0, 0, 0, 0xc3},
			"cannot split f into basic blocks: the jmp at f goes to f+0x3, inside an instruction"},
		{"invalid opcode", []byte{0x90, 0x06, 0xc3},
			"cannot split f into basic blocks: cannot decode the instruction at f+0x1 (06 c3): unrecognized instruction"},
		{"truncated", []byte{0x90, 0xe8, 0x00},
			"cannot split f into basic blocks: cannot decode the instruction at f+0x1 (e8 00): unknown instruction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cfg.Build([]cfg.Region{{Name: "f", Addr: 0x1000, Code: tc.code}}, nil)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func counts(ns ...int) []cfg.Count {
	out := make([]cfg.Count, len(ns))
	for i, n := range ns {
		if n >= 0 {
			out[i] = cfg.Count{N: uint64(n), Known: true}
		}
	}
	return out
}

// flowString prints every count, "?" where unknown, blocks then edges.
func flowString(f *cfg.Flow) string {
	var parts []string
	for _, c := range f.Blocks {
		parts = append(parts, c.String())
	}
	parts = append(parts, "|")
	for _, c := range f.Edges {
		parts = append(parts, c.String())
	}
	return strings.Join(parts, " ")
}

func TestSolve(t *testing.T) {
	g := cfgtest.Loop(t)
	// Edges: f->else, f->then, then->loop, else->loop, loop->loop,
	// loop->ret, ret->out, entry.
	for _, tc := range []struct {
		name       string
		measured   []cfg.Count
		want       string
		unbalanced int
	}{
		{"all measured", counts(10, 3, 7, 25, 10), "10 3 7 25 10 | 7 3 3 7 15 10 10 10", 0},
		// The branch's edges follow from the blocks they lead to.
		{"then not measured", counts(10, -1, 7, 25, 10), "10 3 7 25 10 | 7 3 3 7 15 10 10 10", 0},
		// A loop's trip count is not implied by the blocks around it.
		{"loop not measured", counts(10, 3, 7, -1, 10), "10 3 7 ? 10 | 7 3 3 7 ? 10 10 10", 0},
		// Nothing ran: every edge is zero.
		{"nothing ran", counts(0, 0, 0, 0, 0), "0 0 0 0 0 | 0 0 0 0 0 0 0 0", 0},
		// A block not measured whose count is zero by the flow.
		{"zero inferred", counts(5, 5, -1, 5, 5), "5 5 0 5 5 | 0 5 5 0 0 5 5 5", 0},
		// Counts taken while the function ran do not balance.
		{"in flight", counts(10, 3, 7, 25, 9), "10 3 7 25 9 | 7 3 3 7 15 10 9 10", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := cfg.Solve(g, tc.measured)
			if got := flowString(f); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if len(f.Unbalanced) != tc.unbalanced {
				t.Errorf("%d unbalanced blocks, want %d", len(f.Unbalanced), tc.unbalanced)
			}
		})
	}
}
