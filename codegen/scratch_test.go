package codegen_test

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/syntax"
)

// TestScratchRegions: programs the kernel never runs nested in one
// another on a CPU (tracepoints, perf events, kprobes) share the region
// at 0 of the scratch map, sized for the one that needs most; the others
// (BEGIN and END, raw tracepoints, iterators) may run nested in any
// program, and each has a region of its own in the other map, one after
// another, each starting 8-byte aligned.
func TestScratchRegions(t *testing.T) {
	out := compile(t, "scratch.bt", `
tracepoint:syscalls:sys_enter_openat { @a[str(args.filename)] = count(); }
BEGIN { @b[str(0), str(0, 10)] = count(); }
interval:s:1 { @c[str(0), str(0)] = count(); }
rawtracepoint:sched_switch { @d[str(0)] = count(); }
iter:task { @e[str(0)] = count(); }
END { @f[str(0)] = count(); }
`)
	type region struct {
		mech codegen.Mechanism
		m    string // the scratch map
		base int64  // where its region starts
	}
	want := []region{
		{codegen.MechTracepoint, codegen.ScratchMap, 0},
		{codegen.MechTestRun, codegen.OwnScratchMap, 0},
		{codegen.MechPerfEvent, codegen.ScratchMap, 0},
		{codegen.MechRawTracepoint, codegen.OwnScratchMap, 1040},
		{codegen.MechIter, codegen.OwnScratchMap, 2064},
		{codegen.MechTestRun, codegen.OwnScratchMap, 3088},
	}
	var got []region
	for _, p := range out.Programs {
		r := region{mech: p.Mechanism}
		insns := p.Spec(out).Instructions
		for i, ins := range insns {
			if ref := ins.Reference(); ref == codegen.ScratchMap || ref == codegen.OwnScratchMap {
				r.m = ref
			}
			// The lookup's result becomes R9, then moves to the region.
			if ins.OpCode == asm.Mov.Op(asm.RegSource) && ins.Dst == asm.R9 && i+1 < len(insns) &&
				insns[i+1].OpCode == asm.Add.Op(asm.ImmSource) && insns[i+1].Dst == asm.R9 {
				r.base = insns[i+1].Constant
			}
		}
		got = append(got, r)
	}
	if len(got) != len(want) {
		t.Fatalf("%d programs, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("program %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
	maps := out.Collection.Maps
	if s, o := maps[codegen.ScratchMap].ValueSize, maps[codegen.OwnScratchMap].ValueSize; s != 2048 || o != 4112 {
		t.Errorf("scratch map values of %d and %d bytes, want 2048 and 4112", s, o)
	}
}

// TestBigScratch: programs whose scratch memory outgrows a per-CPU map
// value (32 KiB) get an array of one slice per CPU instead, R9 pointing
// 32 KiB into the program's region so that the instructions' signed
// offsets reach 64 KiB of it; programs that fit keep per-CPU maps.
func TestBigScratch(t *testing.T) {
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src string
		typ       ebpf.MapType
		entries   uint32
		base      int64 // what the prologue adds to R9
		size      uint32
	}{
		{"fits", `BEGIN { @[str(0)] = count(); }`, ebpf.PerCPUArray, 1, 0, 20000},
		{"outgrows", `BEGIN { @[str(0), str(0)] = count(); }`, ebpf.Array, uint32(ncpu), 32 << 10, 40000},
	} {
		prog, err := syntax.Parse(tc.name, []byte(tc.src))
		if err != nil {
			t.Fatal(err)
		}
		checked, err := check.Check(prog, &check.Config{Resolver: &attach.Resolver{}, StrLen: 20000})
		if err != nil {
			t.Fatal(err)
		}
		out, err := codegen.Generate(checked, &codegen.Options{EventsSize: 1 << 16, MapEntries: 64})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := out.Collection.Maps[codegen.OwnScratchMap]
		if m.Type != tc.typ || m.MaxEntries != tc.entries || m.ValueSize != tc.size {
			t.Errorf("%s: scratch map %v of %d values of %d bytes, want %v of %d of %d", tc.name, m.Type, m.MaxEntries, m.ValueSize, tc.typ, tc.entries, tc.size)
		}
		var base int64
		insns := out.Programs[0].Spec(out).Instructions
		for i, ins := range insns {
			if ins.OpCode == asm.Mov.Op(asm.RegSource) && ins.Dst == asm.R9 && i+1 < len(insns) &&
				insns[i+1].OpCode == asm.Add.Op(asm.ImmSource) && insns[i+1].Dst == asm.R9 {
				base = insns[i+1].Constant
			}
		}
		if base != tc.base {
			t.Errorf("%s: R9 is the region's start + %d, want + %d", tc.name, base, tc.base)
		}
	}
}
