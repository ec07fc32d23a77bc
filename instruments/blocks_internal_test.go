package instruments

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst"
	"kinst.dev/kinst/instruments/internal/cfg/cfgtest"
	"kinst.dev/kinst/kernel"
)

// loopReport is the loop's report after a run that probed every block
// but the then branch, which the kernel refused.
func loopReport(t *testing.T) *blockReport {
	g := cfgtest.Loop(t)
	refused := make([]error, len(g.Blocks))
	refused[1] = &kernel.KprobeRefusal{Symbol: "f", Offset: 0xd, Errno: unix.EILSEQ, Why: "not an instruction boundary (EILSEQ)"}
	hits := &kinst.Map{Name: "@"}
	for probe, n := range map[string]uint64{"kprobe:f": 10, "kprobe:f+0x14": 7, "kprobe:f+0x19": 25, "kprobe:f+0x1d": 10} {
		hits.Entries = append(hits.Entries, kinst.Entry{Key: []any{probe}, Value: n})
	}
	return newBlockReport(g, refused, []*kinst.Map{hits})
}

func TestBlocksProgram(t *testing.T) {
	r := loopReport(t)
	c := &common{Command: "workload getppid 1", Duration: 2 * time.Second}
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

func TestBlocksLayoutText(t *testing.T) {
	g, f := cfgtest.Synthetic(t, "A B C D E F X!", ">A:100", "A>B:5", "A>C:95", "B>X!:0", "B>E:5", "C>D:60", "C>E:35",
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
	g, f := cfgtest.Synthetic(t, "A B", ">A:0", "A>B:0", "B>:0")
	r := &blockReport{g: g, f: f, refused: make([]error, len(g.Blocks))}
	err := r.propose()
	if want := "f did not run while its blocks were counted: no layout to propose"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}
