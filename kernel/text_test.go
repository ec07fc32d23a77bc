package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
)

func TestKallsymsSize(t *testing.T) {
	ks, err := ParseKallsyms([]byte(`ffffffff81000000 T _text
ffffffff81000000 T _stext
ffffffff81000040 t first
ffffffff81000070 t __pfx_second
ffffffff81000080 T second
ffffffff81000100 T last
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr uint64
		size uint64
		ok   bool
	}{
		{0xffffffff81000000, 0x40, true}, // aliases end at the next address
		{0xffffffff81000040, 0x30, true}, // the padding symbol bounds it
		{0xffffffff81000080, 0x80, true},
		{0xffffffff81000100, 0, false}, // nothing follows
		{0xffffffff81000041, 0, false}, // not a symbol's address
		{0xfffffffe00000000, 0, false}, // before every symbol
	} {
		size, ok := ks.Size(tc.addr)
		if size != tc.size || ok != tc.ok {
			t.Errorf("Size(%#x) = %#x, %v; want %#x, %v", tc.addr, size, ok, tc.size, tc.ok)
		}
	}
}

// TestReadKernel reads a BPF program's JIT image, whose address and bytes
// the kernel also reports through BPF_OBJ_GET_INFO_BY_FD.
func TestReadKernel(t *testing.T) {
	testenv.Root(t)
	var insns asm.Instructions
	for i := range 50 {
		insns = append(insns, asm.Mov.Imm(asm.R0, int32(i)))
	}
	insns = append(insns, asm.Return())
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.RawTracepoint, License: "GPL", Instructions: insns})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	addrs, ok1 := info.JitedKsymAddrs()
	image, ok2 := info.JitedInsns()
	if !ok1 || !ok2 || len(addrs) != 1 || len(image) < 50*5 {
		t.Fatalf("the kernel reports no JIT image: %v %v %d addresses, %d bytes", ok1, ok2, len(addrs), len(image))
	}
	got, err := ReadKernel(uint64(addrs[0]), len(image))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, image) {
		t.Errorf("read\n% x\nthe kernel reports\n% x", got, image)
	}
	// A part of it, from an odd address.
	part, err := ReadKernel(uint64(addrs[0])+7, 33)
	if err != nil || !bytes.Equal(part, image[7:40]) {
		t.Errorf("read % x, %v; want % x", part, err, image[7:40])
	}
}

func TestReadKernelErrors(t *testing.T) {
	testenv.Root(t)
	// User addresses are not kernel memory: bpf_probe_read_kernel
	// refuses them (copy_from_kernel_nofault_allowed).
	_, err := ReadKernel(0x1000, 16)
	if !errors.Is(err, unix.ERANGE) || err.Error() != "bpf_probe_read_kernel at 0x1000: numerical result out of range" {
		t.Errorf("reading 0x1000: %v, want ERANGE", err)
	}
	if _, err := ReadKernel(^uint64(0)-4, 16); err == nil || err.Error() != "bad kernel range 0xfffffffffffffffb+16" {
		t.Errorf("a range that wraps: %v", err)
	}
}

func TestFuncText(t *testing.T) {
	testenv.Root(t)
	text, err := FuncText("vfs_read")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := LoadKallsyms()
	if err != nil {
		t.Fatal(err)
	}
	size, _ := ks.Size(text.Sym.Addr)
	if text.Sym.Name != "vfs_read" || !text.Sym.IsFunc() || uint64(len(text.Code)) != size {
		t.Errorf("got %s (%c) with %d bytes, want vfs_read with %d", text.Sym.Name, text.Sym.Type, len(text.Code), size)
	}
	// A traceable function starts with its ftrace call site, a 5-byte
	// nop or, while something traces it, a call. Kernels built for IBT
	// put an endbr64 first, which they overwrite with a 4-byte nop
	// where IBT is off (as 6.12 does under QEMU).
	code := bytes.TrimPrefix(text.Code, []byte{0xf3, 0x0f, 0x1e, 0xfa})
	code = bytes.TrimPrefix(code, []byte{0x66, 0x0f, 0x1f, 0x00})
	if !bytes.HasPrefix(code, []byte{0x0f, 0x1f, 0x44, 0x00, 0x00}) && code[0] != 0xe8 {
		t.Errorf("vfs_read starts with % x, not an ftrace site", text.Code[:9])
	}
}

func TestFuncTextErrors(t *testing.T) {
	testenv.Root(t)
	ks, err := LoadKallsyms()
	if err != nil {
		t.Fatal(err)
	}
	_, err = FuncText("kinst_no_such_function")
	if !errors.Is(err, ErrNoFunction) || err.Error() != "no such kernel function kinst_no_such_function" {
		t.Errorf("unknown function: %v", err)
	}
	funcs, data := map[string]int{}, map[string]KSym{}
	for _, s := range ks.Symbols() {
		if s.IsFunc() {
			funcs[s.Name]++
		} else {
			data[s.Name] = s
		}
	}
	var dup string
	for name, n := range funcs {
		if n > 1 && (dup == "" || name < dup) {
			dup = name
		}
	}
	if dup == "" {
		t.Fatal("no two kernel functions share a name")
	}
	want := fmt.Sprintf("%d kernel functions are called %s (static functions of several files), and a kprobe cannot tell them apart", funcs[dup], dup)
	if _, err := FuncText(dup); err == nil || err.Error() != want {
		t.Errorf("ambiguous name: %v, want %q", err, want)
	}
	for name, s := range data {
		if funcs[name] > 0 {
			continue
		}
		want := fmt.Sprintf("%s is a kernel symbol of type %c, not a function", name, s.Type)
		if _, err := FuncText(name); err == nil || err.Error() != want {
			t.Errorf("data symbol: %v, want %q", err, want)
		}
		break
	}
}

func TestCheckKprobes(t *testing.T) {
	testenv.Root(t)
	if st := Probe(FeatKprobe); !st.Available {
		_, err := CheckKprobes("vfs_read", []uint64{0})
		if err == nil || configSays("CONFIG_KPROBES") != "" && err.Error() != "this kernel was built without CONFIG_KPROBES" {
			t.Errorf("without kprobes: %v", err)
		}
		return
	}
	errs, err := CheckKprobes("vfs_read", []uint64{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil {
		t.Errorf("vfs_read+0: %v", errs[0])
	}
	var kr *KprobeRefusal
	want := "the kernel refuses a kprobe at vfs_read+0x1: not an instruction boundary as the kernel decodes the function, or inside its ftrace call site (EILSEQ)"
	if !errors.As(errs[1], &kr) || !errors.Is(errs[1], unix.EILSEQ) || kr.Error() != want {
		t.Errorf("vfs_read+1: %v, want %q", errs[1], want)
	}
	// strncpy_from_user is built without ftrace's call site.
	if funcs, err := TraceableFunctions(); err != nil || funcs.Source != SourceFilterFunctions || funcs.Contains("strncpy_from_user") {
		return
	}
	errs, err = CheckKprobes("strncpy_from_user", []uint64{0})
	want = "the kernel refuses a kprobe at strncpy_from_user+0x0: strncpy_from_user is a function ftrace cannot trace, and this kernel allows kprobe events only in traceable functions (EINVAL)"
	if err != nil || errs[0] == nil || errs[0].Error() != want {
		t.Errorf("strncpy_from_user: %v %v, want %q", err, errs, want)
	}
}
