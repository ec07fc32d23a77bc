package instruments_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"kinst.dev/kinst/instruments"
	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

func TestBlocksUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "kinst blocks: name one kernel function\n"},
		{[]string{"vfs_read", "vfs_write"}, "kinst blocks: name one kernel function\n"},
		{[]string{"uprobe:/bin/sh:main"}, "kinst blocks: uprobe:/bin/sh:main is not a kernel function: blocks reads the kernel's own code\n"},
		{[]string{"syscall:getppid"}, "kinst blocks: syscall:getppid is not a kernel function: blocks reads the kernel's own code\n"},
		{[]string{"vfs_read+4"}, "kinst blocks: vfs_read+4: name a kernel function alone, without a module, an offset or a wildcard\n"},
		{[]string{"kprobe:vfs_*"}, "kinst blocks: kprobe:vfs_*: name a kernel function alone, without a module, an offset or a wildcard\n"},
		{[]string{"-f", "xml", "vfs_read"}, "kinst blocks: unknown output format \"xml\": use text or json\n"},
	} {
		stdout, stderr, code := kinst(t, append([]string{"blocks"}, tc.args...)...)
		if code != 2 || stdout != "" || stderr != tc.want {
			t.Errorf("kinst blocks %q: exit %d, stdout %q, stderr %q; want exit 2, %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

func TestBlocksUnknownFunction(t *testing.T) {
	testenv.Root(t)
	stdout, stderr, code := kinst(t, "blocks", "kinst_no_such_function")
	if want := "kinst: kernel function kinst_no_such_function does not exist\n"; code != 1 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, %q", code, stdout, stderr, want)
	}
}

// TestBlocksNoKprobes runs where the kernel has no kprobes, as on the
// project's host: blocks reads the function, then refuses with the
// kernel's reason and attaches nothing.
func TestBlocksNoKprobes(t *testing.T) {
	testenv.Root(t)
	st := kernel.Probe(kernel.FeatKprobe)
	if st.Available {
		t.Skip("this kernel has kprobes; TestBlocksCountsCalls runs instead")
	}
	stdout, stderr, code := kinst(t, "blocks", "vfs_read", "-c", testenv.Workload(t)+" getppid 1")
	if want := "kinst: cannot count the blocks of vfs_read: " + st.Reason + "\n"; code != 1 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, %q", code, stdout, stderr, want)
	}
}

// TestBlocksShow prints the program: one kprobe at each block's start.
func TestBlocksShow(t *testing.T) {
	testenv.Root(t)
	g, err := instruments.FunctionCFG("vfs_read")
	if err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, b := range g.Blocks {
		points = append(points, "kprobe:"+g.Label(b))
	}
	want := strings.Join(points, ",\n") + "\n/pid == 42 && comm == \"cat\"/\n{\n\t@[probe] = count();\n}\ninterval:ms:1500 { exit(); }\n"
	stdout, stderr, code := kinst(t, "blocks", "--show", "--pid", "42", "--comm", "cat", "--duration", "1.5s", "vfs_read")
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("exit %d, stderr %q, stdout\n%s\nwant\n%s", code, stderr, stdout, want)
	}
	if points[0] != "kprobe:vfs_read" || len(points) < 10 {
		t.Errorf("vfs_read split into %d blocks, the first %s", len(points), points[0])
	}
}

// blocksDoc is the JSON document kinst blocks -f json prints.
type blocksDoc struct {
	Function string
	Calls    *uint64
	Blocks   []struct {
		Symbol string
		Start  uint64
		Count  *uint64
		Probed bool
		Reason string
	}
	Edges []struct {
		From, To *int
		Kind     string
		Count    *uint64
	}
	Unbalanced []int
}

// checkFlow checks that every block's count is the sum of its incoming
// edges' and of its outgoing edges' where those are all known, and that
// the run left the entry and some other edges determined.
func checkFlow(t *testing.T, doc *blocksDoc) {
	t.Helper()
	type sums struct {
		in, out          uint64
		inKnown, outKnow bool
	}
	s := make([]sums, len(doc.Blocks))
	for i := range s {
		s[i].inKnown, s[i].outKnow = true, true
	}
	resolved := 0
	for _, e := range doc.Edges {
		if e.Count != nil {
			resolved++
		}
		for _, side := range []struct {
			b     *int
			sum   func(*sums) *uint64
			known func(*sums) *bool
		}{
			{e.From, func(s *sums) *uint64 { return &s.out }, func(s *sums) *bool { return &s.outKnow }},
			{e.To, func(s *sums) *uint64 { return &s.in }, func(s *sums) *bool { return &s.inKnown }},
		} {
			if side.b == nil {
				continue
			}
			if e.Count == nil {
				*side.known(&s[*side.b]) = false
			} else {
				*side.sum(&s[*side.b]) += *e.Count
			}
		}
	}
	for i, b := range doc.Blocks {
		if b.Count == nil {
			continue
		}
		if s[i].inKnown && s[i].in != *b.Count {
			t.Errorf("block %s+%#x ran %d times, its incoming edges %d", b.Symbol, b.Start, *b.Count, s[i].in)
		}
		if s[i].outKnow && s[i].out != *b.Count {
			t.Errorf("block %s+%#x ran %d times, its outgoing edges %d", b.Symbol, b.Start, *b.Count, s[i].out)
		}
	}
	if len(doc.Unbalanced) > 0 {
		t.Errorf("blocks %v do not balance", doc.Unbalanced)
	}
	if doc.Calls == nil || resolved < len(doc.Edges)/2 {
		t.Errorf("calls %v, %d of %d edges resolved", doc.Calls, resolved, len(doc.Edges))
	}
}

var atCount = regexp.MustCompile(`(?m)^@: (\d+)$`)

// TestBlocksCountsCalls counts the blocks of vfs_write while the workload
// writes n times: the entry block runs as often as a kprobe on the
// function fires in a second run, n times, and the counts balance.
func TestBlocksCountsCalls(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	const n = 300
	work := fmt.Sprintf("%s write %d 10", testenv.Workload(t), n)
	stdout, stderr, code := kinst(t, "blocks", "-f", "json", "vfs_write", "-c", work)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc blocksDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v in\n%s", err, stdout)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	stdout, stderr, code = kinst(t, "-e", "kprobe:vfs_write /pid == cpid/ { @ = count(); }", "-c", work)
	m := atCount.FindStringSubmatch(stdout)
	if code != 0 || m == nil {
		t.Fatalf("kinst -e: exit %d, %s%s", code, stdout, stderr)
	}
	calls, _ := strconv.ParseUint(m[1], 10, 64)
	if calls != n {
		t.Errorf("a kprobe counted %d calls of vfs_write, the workload made %d", calls, n)
	}
	entry := doc.Blocks[0]
	if doc.Function != "vfs_write" || entry.Start != 0 || !entry.Probed || entry.Count == nil || *entry.Count != calls {
		t.Errorf("entry block of %s at +%#x: count %v, probed %v; want %d", doc.Function, entry.Start, entry.Count, entry.Probed, calls)
	}
	if doc.Calls == nil || *doc.Calls != calls {
		t.Errorf("calls %v, want %d", doc.Calls, calls)
	}
	checkFlow(t, &doc)
	for _, b := range doc.Blocks {
		if !b.Probed && b.Reason == "" {
			t.Errorf("block +%#x not probed, with no reason", b.Start)
		}
	}
}

// TestBlocksLoop counts the path walk's blocks while the workload opens
// a file seven directories deep n times: the text report shows the calls
// in its header and the entry block, and a block that runs once per
// directory.
func TestBlocksLoop(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	ks, err := kernel.LoadKallsyms()
	if err != nil {
		t.Fatal(err)
	}
	walk := ks.Functions("link_path_walk*")
	if len(walk) != 1 {
		t.Fatalf("kernel functions called link_path_walk*: %q", walk)
	}
	dir := filepath.Join(t.TempDir(), "a", "b", "c", "d", "e", "f", "g")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "file")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 50
	stdout, stderr, code := kinst(t, "blocks", "-q", walk[0], "-c", fmt.Sprintf("%s openat %d %s", testenv.Workload(t), n, path))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	header := regexp.MustCompile(`^` + regexp.QuoteMeta(walk[0]) + ` at 0x[0-9a-f]+, \d+ bytes: (\d+) blocks, (\d+) probed, (\d+) calls\n\ncount  ` + regexp.QuoteMeta(walk[0]) + ":\n *(\\d+)  \\+0x0  ")
	m := header.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no header in\n%s", stdout)
	}
	calls, _ := strconv.Atoi(m[3])
	if entry, _ := strconv.Atoi(m[4]); calls < n || entry != calls {
		t.Errorf("%d calls, the entry block ran %d times; want at least %d", calls, entry, n)
	}
	most := 0
	for _, m := range regexp.MustCompile(`(?m)^ *\(?(\d+)\)?  \+0x`).FindAllStringSubmatch(stdout, -1) {
		c, _ := strconv.Atoi(m[1])
		most = max(most, c)
	}
	if most < 7*n {
		t.Errorf("no block ran once per directory: at most %d times for %d opens of a path 7 directories deep\n%s", most, n, stdout)
	}
	if strings.Contains(stdout, "do not balance") {
		t.Errorf("counts taken under -c do not balance:\n%s", stdout)
	}
}

// TestBlocksRefused names a function ftrace cannot trace: the kernel
// refuses a kprobe at each of its blocks, and blocks says why.
func TestBlocksRefused(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	funcs, err := kernel.TraceableFunctions()
	if err != nil {
		t.Fatal(err)
	}
	if funcs.Source != kernel.SourceFilterFunctions || funcs.Contains("strncpy_from_user") {
		t.Skip("strncpy_from_user is traceable here")
	}
	g, err := instruments.FunctionCFG("strncpy_from_user")
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, code := kinst(t, "blocks", "strncpy_from_user", "-c", testenv.Workload(t)+" getppid 1")
	want := fmt.Sprintf("kinst: cannot count the blocks of strncpy_from_user: the kernel refuses kprobes at all %d of its blocks: "+
		"the kernel refuses a kprobe at strncpy_from_user+0x0: strncpy_from_user is a function ftrace cannot trace, and this kernel allows kprobe events only in traceable functions (EINVAL)\n", len(g.Blocks))
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q; want exit 1, %q", code, stderr, want)
	}
}

// TestBlocksLayout proposes a layout of vfs_write from a run that writes
// n times, and checks it against the counts of the same run: the order
// holds every block once, the entry first and the blocks that never ran
// last, and the fall-through totals are those of the edges whose
// destination follows their source.
func TestBlocksLayout(t *testing.T) {
	testenv.Require(t, testenv.Kprobe)
	work := fmt.Sprintf("%s write %d 10", testenv.Workload(t), 300)
	stdout, stderr, code := kinst(t, "blocks", "--layout", "-f", "json", "vfs_write", "-c", work)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		blocksDoc
		Layout struct {
			Transitions, Current, Proposed uint64
			Order, Cold                    []int
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v in\n%s", err, stdout)
	}
	checkFlow(t, &doc.blocksDoc)
	l := doc.Layout
	var cold []int
	for i, b := range doc.Blocks {
		if b.Count != nil && *b.Count == 0 {
			cold = append(cold, i)
		}
	}
	if fmt.Sprint(l.Cold) != fmt.Sprint(cold) {
		t.Errorf("cold blocks %v, those that ran 0 times %v", l.Cold, cold)
	}
	pos := map[int]int{}
	for i, b := range l.Order {
		pos[b] = i
	}
	if len(l.Order) != len(doc.Blocks) || len(pos) != len(doc.Blocks) || l.Order[0] != 0 ||
		fmt.Sprint(l.Order[len(l.Order)-len(cold):]) != fmt.Sprint(cold) {
		t.Fatalf("order %v of %d blocks: want each once, the entry first, the cold blocks %v last", l.Order, len(doc.Blocks), cold)
	}
	var total, current, proposed uint64
	for _, e := range doc.Edges {
		if e.From == nil || e.To == nil || e.Count == nil {
			continue
		}
		total += *e.Count
		if e.Kind == "fall" {
			current += *e.Count
		}
		if pos[*e.To] == pos[*e.From]+1 {
			proposed += *e.Count
		}
	}
	if l.Transitions != total || l.Current != current || l.Proposed != proposed || proposed < current || total == 0 {
		t.Errorf("layout: %d transitions, %d falling through now, %d proposed; the edges: %d, %d, %d",
			l.Transitions, l.Current, l.Proposed, total, current, proposed)
	}

	stdout, stderr, code = kinst(t, "blocks", "--layout", "vfs_write", "-c", work)
	text := regexp.MustCompile(`^vfs_write at 0x[0-9a-f]+, \d+ bytes[^\n]*: (\d+) blocks, \d+ probed, 300 calls\n` +
		`fall-through: current (\d+)%, proposed (\d+)%\nof \d+ transitions between blocks[^\n]*\ncold: \d+ of (\d+) blocks never ran[^\n]*\nproposed order:\ncount  block\n *300  \+0x0\n`)
	if m := text.FindStringSubmatch(stdout); code != 0 || m == nil || m[1] != m[4] {
		t.Errorf("exit %d, stderr %q, stdout\n%s", code, stderr, stdout)
	}
}
