package codegen_test

import (
	"testing"

	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/syntax"
)

// TestRangeLoopHelper: a range loop runs through bpf_loop only where the
// kernel has it and a bound is not a constant; constant bounds stay a
// plain loop, which every kernel with bounded loops takes, and the
// kernel is then not asked.
func TestRangeLoopHelper(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		hasLoop   bool
		calls     int  // bpf_loop calls in the program
		asked     bool // whether the kernel was asked for bpf_loop
	}{
		{"map bound", `BEGIN { @n = 3; for ($i : 0..@n) { } }`, true, 1, true},
		{"map bound, no bpf_loop", `BEGIN { @n = 3; for ($i : 0..@n) { } }`, false, 0, true},
		{"variable start", `BEGIN { $x = 1; for ($i : $x..5) { } }`, true, 1, true},
		{"constants", `BEGIN { for ($i : 0..5) { } for ($j : (-1)..(2*3)) { } }`, true, 0, false},
		{"positional parameter", `BEGIN { for ($i : 0..$1) { } }`, true, 0, false},
		{"nested", `BEGIN { @n = 2; for ($i : 0..@n) { for ($j : 0..$i) { } } }`, true, 2, true},
		// Where another loop runs as a callback the variables live in
		// the scratch map, whose words the verifier does not follow
		// from round to round: constant bounds are no help then.
		{"constants around a variable bound", `BEGIN { $n = 3; for ($i : 1..2) { for ($j : 1..$n) { } } }`, true, 2, true},
		{"constants beside a map loop", `BEGIN { @m[1] = 1; for ($kv : @m) { } for ($i : 0..2) { } }`, true, 1, true},
		{"constants beside a map loop, no bpf_loop", `BEGIN { @m[1] = 1; for ($kv : @m) { } for ($i : 0..2) { } }`, false, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := syntax.Parse("loop.bt", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			checked, err := check.Check(prog, &check.Config{Resolver: &attach.Resolver{}, Params: []string{"7"}})
			if err != nil {
				t.Fatal(err)
			}
			asked := false
			out, err := codegen.Generate(checked, &codegen.Options{HasLoop: func() bool { asked = true; return tt.hasLoop }})
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			for _, ins := range out.Programs[0].Spec(out).Instructions {
				if ins.IsBuiltinCall() && ins.Constant == int64(asm.FnLoop) {
					calls++
				}
			}
			if calls != tt.calls || asked != tt.asked {
				t.Errorf("%d bpf_loop calls, kernel asked %v; want %d, %v", calls, asked, tt.calls, tt.asked)
			}
		})
	}
}

// TestSearchLoop: strcontains() and strstr() run through bpf_loop when
// the haystack's size times the needle's is past what the verifier
// follows position by position, and only then ask the kernel for it;
// without bpf_loop such a search is refused, located.
func TestSearchLoop(t *testing.T) {
	for _, tt := range []struct {
		name, expr string
		hasLoop    bool
		calls      int    // bpf_loop calls in the program
		asked      bool   // whether the kernel was asked for bpf_loop
		err        string // the error, if any
	}{
		{"short needle", `strcontains(str($p), "abc")`, true, 0, false, ""},
		{"short haystack", `strstr(comm, "/usr/lib/")`, true, 0, false, ""},
		{"long needle", `strcontains(str($p), "/usr/lib/")`, true, 1, true, ""},
		{"long needle, strstr", `strstr(str($p), "/usr/lib/")`, true, 1, true, ""},
		{"needle longer than the unrolled", `strstr(str($p), str($p, 100))`, true, 1, true, ""},
		{"both long", `strstr(str($p), str($p))`, true, 1, true, ""},
		{"no bpf_loop", `strcontains(str($p), "/usr/lib/")`, false, 0, true,
			"loop.bt:1:29: strcontains(): searching 1024 bytes for up to 10 is 10240 comparisons, more than the 4096 the verifier is known to accept; shorten the strings with str(s, N)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := `BEGIN { $p = (uint64)0; @ = ` + tt.expr + `; }`
			prog, err := syntax.Parse("loop.bt", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			checked, err := check.Check(prog, &check.Config{Resolver: &attach.Resolver{}})
			if err != nil {
				t.Fatal(err)
			}
			asked := false
			out, err := codegen.Generate(checked, &codegen.Options{HasLoop: func() bool { asked = true; return tt.hasLoop }})
			if tt.err != "" || err != nil {
				if err == nil || err.Error() != tt.err || asked != tt.asked {
					t.Errorf("error %v, kernel asked %v; want %s, %v", err, asked, tt.err, tt.asked)
				}
				return
			}
			calls := 0
			for _, ins := range out.Programs[0].Spec(out).Instructions {
				if ins.IsBuiltinCall() && ins.Constant == int64(asm.FnLoop) {
					calls++
				}
			}
			if calls != tt.calls || asked != tt.asked {
				t.Errorf("%d bpf_loop calls, kernel asked %v; want %d, %v", calls, asked, tt.calls, tt.asked)
			}
		})
	}
}
