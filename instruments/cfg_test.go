package instruments

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/output"
)

// describe prints a graph's blocks, with their instructions, and its
// edges, one a line.
func describe(g *CFG) string {
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

func loopCFG(t *testing.T) *CFG {
	t.Helper()
	g, err := BuildCFG([]Region{{Name: "f", Addr: 0x1000, Code: loopCode}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBuildCFGLoop(t *testing.T) {
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
	if got := describe(loopCFG(t)); got != want {
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

func TestBuildCFGExits(t *testing.T) {
	g, err := BuildCFG([]Region{
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

func TestBuildCFGThunks(t *testing.T) {
	code := []byte{
		0x85, 0xff, // 0x00 test %edi,%edi
		0x74, 0x05, // 0x02 je 0x1009
		0xe9, 0xf7, 0x2f, 0x00, 0x00, // 0x04 jmp 0x4000
		0xe9, 0xf2, 0x30, 0x00, 0x00, // 0x09 jmp 0x4100
		0xc3,             // 0x0e ret, which nothing reaches
		0x31, 0xc0, 0xc3, // 0x0f xor %eax,%eax; ret
	}
	g, err := BuildCFG([]Region{{Name: "t", Addr: 0x1000, Code: code}}, symbols)
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

func TestBuildCFGErrors(t *testing.T) {
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
			_, err := BuildCFG([]Region{{Name: "f", Addr: 0x1000, Code: tc.code}}, nil)
			if err == nil || err.Error() != tc.want || !errors.Is(err, ErrSplit) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDecodeSystem covers instructions the kernel uses that x86asm does
// not decode, some of which it reads as a bare rep prefix.
func TestDecodeSystem(t *testing.T) {
	for _, tc := range []struct {
		code []byte
		text string
		n    int
	}{
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa}, "endbr64", 4},
		{[]byte{0xf3, 0x0f, 0x1e, 0xfb}, "endbr32", 4},
		{[]byte{0x0f, 0x01, 0xca}, "clac", 3},
		{[]byte{0x0f, 0x01, 0xcb}, "stac", 3},
		{[]byte{0x0f, 0x01, 0xfe}, "invlpgb", 3},
		{[]byte{0x0f, 0x01, 0xff}, "tlbsync", 3},
		{[]byte{0xf3, 0x0f, 0xc7, 0xf8}, "rdpid %rax", 4},
		{[]byte{0xf3, 0x41, 0x0f, 0xc7, 0xf9}, "rdpid %r9", 5},
		{[]byte{0x48, 0x0f, 0xc7, 0xf8}, "rdseed %rax", 4},
		{[]byte{0x0f, 0xc7, 0xf2}, "rdrand %edx", 3},
		{[]byte{0xf3, 0x48, 0x0f, 0x1e, 0xc8}, "rdssp %rax", 5},
		{[]byte{0xf2, 0x0f, 0x00, 0xf7}, "lkgs %di", 4},
		{[]byte{0x66, 0x0f, 0xae, 0xf1}, "tpause %ecx", 4},
		{[]byte{0xf2, 0x0f, 0xae, 0xf1}, "umwait %ecx", 4},
		{[]byte{0xf3, 0x0f, 0xae, 0xf0}, "umonitor %rax", 4},
	} {
		in, err := decodeInst(tc.code, 0x1000, nil)
		if err != nil || in.Text != tc.text || in.Len != tc.n {
			t.Errorf("% x: got %q, %d bytes, %v; want %q, %d bytes", tc.code, in.Text, in.Len, err, tc.text, tc.n)
		}
	}
	// Forms it leaves to x86asm.
	for _, code := range [][]byte{{0x90}, {0x0f, 0x01, 0xf8}, {0x0f, 0xc7, 0x0e}, {0xf3, 0x0f, 0x1e, 0x01}} {
		if text, _, ok := decodeSystem(code); ok {
			t.Errorf("% x: decoded as %q", code, text)
		}
	}
}

func counts(ns ...int) []Count {
	out := make([]Count, len(ns))
	for i, n := range ns {
		if n >= 0 {
			out[i] = Count{N: uint64(n), Known: true}
		}
	}
	return out
}

// flowString prints every count, "?" where unknown, blocks then edges.
func flowString(f *Flow) string {
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
	g := loopCFG(t)
	// Edges: f->else, f->then, then->loop, else->loop, loop->loop,
	// loop->ret, ret->out, entry.
	for _, tc := range []struct {
		name       string
		measured   []Count
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
			f := Solve(g, tc.measured)
			if got := flowString(f); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if len(f.Unbalanced) != tc.unbalanced {
				t.Errorf("%d unbalanced blocks, want %d", len(f.Unbalanced), tc.unbalanced)
			}
		})
	}
}

// loopReport is the loop's report after a run that probed every block
// but the then branch, which the kernel refused.
func loopReport(t *testing.T) *blockReport {
	g := loopCFG(t)
	refused := make([]error, len(g.Blocks))
	refused[1] = &kernel.KprobeRefusal{Symbol: "f", Offset: 0xd, Errno: unix.EILSEQ, Why: "not an instruction boundary (EILSEQ)"}
	hits := &output.Map{Name: "@", Kind: output.KindCount}
	for probe, n := range map[string]uint64{"kprobe:f": 10, "kprobe:f+0x14": 7, "kprobe:f+0x19": 25, "kprobe:f+0x1d": 10} {
		hits.Entries = append(hits.Entries, output.Entry{Key: []output.Value{output.Probe(probe)}, Value: output.Count(n)})
	}
	return newBlockReport(g, refused, []*output.Map{hits})
}

func TestBlocksProgram(t *testing.T) {
	r := loopReport(t)
	c := &Common{Command: "workload getppid 1", Duration: 2 * time.Second}
	want := `kprobe:f,
kprobe:f+0x14,
kprobe:f+0x19,
kprobe:f+0x1d
/pid == cpid/
{
	@[probe] = count();
}
interval:ms:2000 { exit(); }
`
	if got := blocksProgram(c, r.g, r.refused); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestBlocksText(t *testing.T) {
	want := `f at 0x1000, 32 bytes: 5 blocks, 4 probed, 10 calls

count  f:
   10  +0x0   endbr64
       +0x4   nopl (%rax,%rax)
       +0x9   test %edi,%edi
       +0xb   je f+0x14
              -> +0x14: 7, +0xd: 3

              ; not probed: not an instruction boundary (EILSEQ)
  (3)  +0xd   mov $0x1,%eax
       +0x12  jmp f+0x19
              -> +0x19: 3

    7  +0x14  mov $0x2,%eax
              -> +0x19: 7

   25  +0x19  dec %eax
       +0x1b  jne f+0x19
              -> +0x19: 15, +0x1d: 10

   10  +0x1d  retq
              -> return: 10

       +0x1e  (2 bytes of padding)

(N): a block not probed, whose count the edges determine
`
	var sb strings.Builder
	if err := loopReport(t).writeText(&sb, false); err != nil {
		t.Fatal(err)
	}
	if sb.String() != want {
		t.Errorf("got\n%s\nwant\n%s", sb.String(), want)
	}

	wantQuiet := `f at 0x1000, 32 bytes: 5 blocks, 4 probed, 10 calls

count  f:
   10  +0x0   endbr64
              -> +0x14: 7, +0xd: 3

              ; not probed: not an instruction boundary (EILSEQ)
  (3)  +0xd   mov $0x1,%eax
              -> +0x19: 3

    7  +0x14  mov $0x2,%eax
              -> +0x19: 7

   25  +0x19  dec %eax
              -> +0x19: 15, +0x1d: 10

   10  +0x1d  retq
              -> return: 10

(N): a block not probed, whose count the edges determine
`
	sb.Reset()
	if err := loopReport(t).writeText(&sb, true); err != nil {
		t.Fatal(err)
	}
	if sb.String() != wantQuiet {
		t.Errorf("-q: got\n%s\nwant\n%s", sb.String(), wantQuiet)
	}
}

func TestBlocksJSON(t *testing.T) {
	var sb strings.Builder
	if err := loopReport(t).writeJSON(&sb); err != nil {
		t.Fatal(err)
	}
	want := `{"function":"f","address":4096,"size":32,"calls":10,"blocks":[` +
		`{"symbol":"f","start":0,"end":13,"count":10,"probed":true,"instructions":[{"offset":0,"text":"endbr64"},{"offset":4,"text":"nopl (%rax,%rax)"},{"offset":9,"text":"test %edi,%edi"},{"offset":11,"text":"je f+0x14"}]},` +
		`{"symbol":"f","start":13,"end":20,"count":3,"probed":false,"reason":"not an instruction boundary (EILSEQ)","instructions":[{"offset":13,"text":"mov $0x1,%eax"},{"offset":18,"text":"jmp f+0x19"}]},` +
		`{"symbol":"f","start":20,"end":25,"count":7,"probed":true,"instructions":[{"offset":20,"text":"mov $0x2,%eax"}]},` +
		`{"symbol":"f","start":25,"end":29,"count":25,"probed":true,"instructions":[{"offset":25,"text":"dec %eax"},{"offset":27,"text":"jne f+0x19"}]},` +
		`{"symbol":"f","start":29,"end":30,"count":10,"probed":true,"instructions":[{"offset":29,"text":"retq"}]}],"edges":[` +
		`{"from":0,"to":2,"kind":"taken","count":7},{"from":0,"to":1,"kind":"fall","count":3},` +
		`{"from":1,"to":3,"kind":"taken","count":3},{"from":2,"to":3,"kind":"fall","count":7},` +
		`{"from":3,"to":3,"kind":"taken","count":15},{"from":3,"to":4,"kind":"fall","count":10},` +
		`{"from":4,"to":null,"kind":"exit","note":"return","count":10},{"from":null,"to":0,"kind":"entry","note":"call","count":10}],` +
		`"unbalanced":[]}` + "\n"
	if sb.String() != want {
		t.Errorf("got\n%s\nwant\n%s", sb.String(), want)
	}
}
