package bpfelf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/bpfelf"
)

// body is a program that bumps a counter found by address, looks a
// value up in a hash map through a jump past a label, and returns 0.
func body() asm.Instructions {
	return asm.Instructions{
		asm.LoadMapValue(asm.R1, 0, 16).WithReference("lost"),
		asm.Mov.Imm(asm.R2, 1),
		asm.StoreXAdd(asm.R1, asm.R2, asm.DWord),
		asm.StoreMem(asm.R10, -8, asm.R2, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference("counts"),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMapPtr(asm.R1, 0).WithReference("events"),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}

func collection(progs map[string]*ebpf.ProgramSpec) *ebpf.CollectionSpec {
	for _, p := range progs {
		p.Instructions = body()
		p.License = "GPL"
	}
	return &ebpf.CollectionSpec{
		Programs: progs,
		Maps: map[string]*ebpf.MapSpec{
			"counts": {Name: "m_counts", Type: ebpf.PerCPUHash, KeySize: 8, ValueSize: 8, MaxEntries: 4096},
			"events": {Name: "events", Type: ebpf.RingBuf, MaxEntries: 1 << 20},
			"lost":   {Name: "lost", Type: ebpf.Array, KeySize: 4, ValueSize: 24, MaxEntries: 1, Flags: 1 << 10},
			"unused": {Name: "unused", Type: ebpf.Hash, KeySize: 16, ValueSize: 64, MaxEntries: 10, Flags: 1},
		},
	}
}

// TestRoundTrip writes every kind of program kinst makes and reads the
// object back with cilium/ebpf: same programs, instructions and maps.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		prog     *ebpf.ProgramSpec
		section  string // the section the program is written in
		attachTo string // what LoadCollectionSpec reads back
	}{
		{&ebpf.ProgramSpec{Type: ebpf.Kprobe}, "kprobe", ""},
		{&ebpf.ProgramSpec{Type: ebpf.Kprobe, SectionName: "uretprobe//bin/bash:readline"}, "uretprobe//bin/bash:readline", "/bin/bash:readline"},
		{&ebpf.ProgramSpec{Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceKprobeMulti}, "kprobe.multi", ""},
		{&ebpf.ProgramSpec{Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceKprobeSession}, "kprobe.session", ""},
		{&ebpf.ProgramSpec{Type: ebpf.Kprobe, AttachType: ebpf.AttachTraceUprobeMulti}, "uprobe.multi", ""},
		{&ebpf.ProgramSpec{Type: ebpf.TracePoint, SectionName: "tracepoint/sched/sched_switch"}, "tracepoint/sched/sched_switch", "sched/sched_switch"},
		{&ebpf.ProgramSpec{Type: ebpf.RawTracepoint}, "raw_tracepoint", ""},
		{&ebpf.ProgramSpec{Type: ebpf.PerfEvent}, "perf_event", ""},
		{&ebpf.ProgramSpec{Type: ebpf.XDP, AttachType: ebpf.AttachXDP}, "xdp", ""},
		{&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: "vfs_read"}, "fentry/vfs_read", "vfs_read"},
		{&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFExit, AttachTo: "vfs_read"}, "fexit/vfs_read", "vfs_read"},
		{&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachModifyReturn, AttachTo: "security_file_open"}, "fmod_ret/security_file_open", "security_file_open"},
		{&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceIter, AttachTo: "task"}, "iter/task", "task"},
	}
	progs := map[string]*ebpf.ProgramSpec{}
	for i, tt := range tests {
		progs[fmt.Sprintf("probe%d", i)] = tt.prog
	}
	spec := collection(progs)
	got := roundTrip(t, spec)
	if len(got.Programs) != len(tests) {
		t.Fatalf("read back %d programs, want %d", len(got.Programs), len(tests))
	}
	for i, tt := range tests {
		name := fmt.Sprintf("probe%d", i)
		p := got.Programs[name]
		if p == nil {
			t.Errorf("%s (%s) missing", name, tt.section)
			continue
		}
		if p.Name != name || p.SectionName != tt.section || p.Type != tt.prog.Type || p.AttachType != tt.prog.AttachType || p.AttachTo != tt.attachTo || p.License != "GPL" {
			t.Errorf("%s read back as %q in %q: %s/%s to %q, license %q; want %s/%s to %q in %q",
				name, p.Name, p.SectionName, p.Type, p.AttachType, p.AttachTo, p.License,
				tt.prog.Type, tt.prog.AttachType, tt.attachTo, tt.section)
		}
		sameInstructions(t, name, tt.prog.Instructions, p.Instructions, got.ByteOrder)
	}
	sameMaps(t, spec.Maps, got.Maps)
}

// TestErrors covers what the format cannot say.
func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*ebpf.CollectionSpec)
		want string
	}{
		{"descriptor", func(c *ebpf.CollectionSpec) {
			c.Programs["p"].Instructions[4] = asm.LoadMapPtr(asm.R1, 3)
		}, "program p: instruction 4 loads a map by descriptor, not by name: not expressible in a BPF ELF object"},
		{"unknown map", func(c *ebpf.CollectionSpec) { delete(c.Maps, "counts") },
			"program p refers to map counts, which the collection lacks"},
		{"value of a hash", func(c *ebpf.CollectionSpec) { c.Maps["lost"].Type = ebpf.Hash },
			"map lost: the programs read it by address, which an object says only of a data section, and only a single-entry array read no other way can be one: not expressible in a BPF ELF object"},
		{"contents", func(c *ebpf.CollectionSpec) {
			c.Maps["unused"].Contents = []ebpf.MapKV{{Key: uint32(0), Value: uint32(1)}}
		},
			"map unused: initial contents, an inner map, pinning or extra: not expressible in a BPF ELF object"},
		{"section of another type", func(c *ebpf.CollectionSpec) { c.Programs["p"].SectionName = "kprobe/vfs_read" },
			`program p: section "kprobe/vfs_read" does not make a TracePoint program (use tracepoint)`},
		{"fentry without function", func(c *ebpf.CollectionSpec) {
			c.Programs["p"].Type, c.Programs["p"].AttachType = ebpf.Tracing, ebpf.AttachTraceFEntry
		}, "program p: TraceFEntry program without the function it attaches to: not expressible in a BPF ELF object"},
		{"fentry section of another function", func(c *ebpf.CollectionSpec) {
			p := c.Programs["p"]
			p.Type, p.AttachType, p.AttachTo, p.SectionName = ebpf.Tracing, ebpf.AttachTraceFEntry, "vfs_read", "fentry/vfs_write"
		}, `program p: section "fentry/vfs_write" does not name "vfs_read", the function the program attaches to`},
		{"socket filter", func(c *ebpf.CollectionSpec) { c.Programs["p"].Type = ebpf.SocketFilter },
			"program p: SocketFilter program with attach type None: not expressible in a BPF ELF object"},
		{"kfunc", func(c *ebpf.CollectionSpec) {
			c.Programs["p"].Instructions[7] = asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: 5}
		}, "program p: instruction 7 (Call Kfunc(5)): not expressible in a BPF ELF object"},
		{"two licenses", func(c *ebpf.CollectionSpec) {
			q := c.Programs["p"].Copy()
			q.License = "Dual MIT/GPL"
			c.Programs["q"] = q
		}, "program q: license or kernel version differs from the other programs': an object has one: not expressible in a BPF ELF object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := collection(map[string]*ebpf.ProgramSpec{"p": {Type: ebpf.TracePoint}})
			tt.edit(spec)
			err := bpfelf.Write(new(bytes.Buffer), spec)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
			if strings.HasSuffix(tt.want, bpfelf.ErrUnsupported.Error()) && !errors.Is(err, bpfelf.ErrUnsupported) {
				t.Errorf("%v does not wrap ErrUnsupported", err)
			}
		})
	}
}

func roundTrip(t *testing.T, spec *ebpf.CollectionSpec) *ebpf.CollectionSpec {
	t.Helper()
	var buf bytes.Buffer
	if err := bpfelf.Write(&buf, spec); err != nil {
		t.Fatal(err)
	}
	got, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("LoadCollectionSpec: %v", err)
	}
	return got
}

// sameInstructions compares the instructions as they are encoded, jumps
// resolved, and the maps their loads name.
func sameInstructions(t *testing.T, name string, want, got asm.Instructions, bo binary.ByteOrder) {
	t.Helper()
	if w, g := encoded(t, want, bo), encoded(t, got, bo); !bytes.Equal(w, g) {
		t.Errorf("%s: instructions read back differ:\n%v\nwant\n%v", name, got, want)
	}
	if w, g := mapRefs(want, true), mapRefs(got, false); !slices.Equal(w, g) {
		t.Errorf("%s: map references read back %q, want %q", name, g, w)
	}
}

func encoded(t *testing.T, insns asm.Instructions, bo binary.ByteOrder) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := slices.Clone(insns).Marshal(&buf, bo); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mapRefs lists the maps each map load names; renamed gives the names a
// read back object uses for the maps read by address.
func mapRefs(insns asm.Instructions, renamed bool) []string {
	var refs []string
	for i, ins := range insns {
		if !ins.IsLoadFromMap() {
			continue
		}
		ref := ins.Reference()
		if renamed && ins.Src == asm.PseudoMapValue {
			ref = bpfelf.DataSection(ref)
		}
		refs = append(refs, fmt.Sprintf("%d:%s", i, ref))
	}
	return refs
}

// sameMaps checks every map is read back with its type, sizes, entries
// and flags, those read by address as data sections, to which loaders
// add BPF_F_MMAPABLE themselves.
func sameMaps(t *testing.T, want, got map[string]*ebpf.MapSpec) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("read back %d maps, want %d", len(got), len(want))
	}
	for key, w := range want {
		g := got[key]
		flags := w.Flags
		if g == nil {
			key = bpfelf.DataSection(key)
			g = got[key]
			flags &^= 1 << 10
		}
		if g == nil {
			t.Errorf("map %s missing", key)
			continue
		}
		if g.Name != key || g.Type != w.Type || g.KeySize != w.KeySize || g.ValueSize != w.ValueSize || g.MaxEntries != w.MaxEntries || g.Flags != flags {
			t.Errorf("map %s read back as %q %s %d/%d/%d flags %#x, want %s %d/%d/%d flags %#x", key,
				g.Name, g.Type, g.KeySize, g.ValueSize, g.MaxEntries, g.Flags,
				w.Type, w.KeySize, w.ValueSize, w.MaxEntries, flags)
		}
	}
}
