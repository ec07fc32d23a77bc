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
