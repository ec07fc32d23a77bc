package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"kinst.dev/kinst/elfsym"
)

func TestParseArgs(t *testing.T) {
	syms := func() []elf.Symbol {
		return []elf.Symbol{
			{Name: "counter", Value: 0x4010, Section: 20},
			{Name: "undefined", Value: 0, Section: elf.SHN_UNDEF},
		}
	}
	const site = 0x1130
	tests := []struct {
		spec string
		want []Arg
	}{
		{"", []Arg{}},
		{"-4@%eax", []Arg{{Size: 4, Signed: true, Kind: Reg, Reg: "ax", RegSize: 4}}},
		{"8@%rdx 2@%r8w -1@%dil 1@%ah", []Arg{
			{Size: 8, Kind: Reg, Reg: "dx", RegSize: 8},
			{Size: 2, Kind: Reg, Reg: "r8", RegSize: 2},
			{Size: 1, Signed: true, Kind: Reg, Reg: "di", RegSize: 1},
			{Size: 1, Kind: Reg, Reg: "ax", RegSize: 1, Shift: 8},
		}},
		{"4@%r12d -8@%r15", []Arg{
			{Size: 4, Kind: Reg, Reg: "r12", RegSize: 4},
			{Size: 8, Signed: true, Kind: Reg, Reg: "r15", RegSize: 8},
		}},
		{"8@$5 -4@$-7 8@$0xffffffffffffffff", []Arg{
			{Size: 8, Kind: Const, Value: 5},
			{Size: 4, Signed: true, Kind: Const, Value: -7},
			{Size: 8, Kind: Const, Value: -1},
		}},
		{"8@-8(%rbp) -4@112(%rsp) 8@(%rax)", []Arg{
			{Size: 8, Kind: Mem, Reg: "bp", Value: -8},
			{Size: 4, Signed: true, Kind: Mem, Reg: "sp", Value: 112},
			{Size: 8, Kind: Mem, Reg: "ax"},
		}},
		{"4@16(%rax,%rdx,4) 8@(%rbx,%rcx)", []Arg{
			{Size: 4, Kind: Mem, Reg: "ax", Value: 16, Index: "dx", Scale: 4},
			{Size: 8, Kind: Mem, Reg: "bx", Index: "cx", Scale: 1},
		}},
		// Symbols relative to %rip are kept relative to the site.
		{"-8@counter(%rip) -4@8+counter(%rip) 4@counter-4(%rip)", []Arg{
			{Size: 8, Signed: true, Kind: Mem, Reg: "ip", Value: 0x4010 - site},
			{Size: 4, Signed: true, Kind: Mem, Reg: "ip", Value: 0x4018 - site},
			{Size: 4, Kind: Mem, Reg: "ip", Value: 0x400c - site},
		}},
		// Notes written without sizes read 8 unsigned bytes.
		{"%rsi", []Arg{{Size: 8, Kind: Reg, Reg: "si", RegSize: 8}}},
	}
	for _, tt := range tests {
		got, err := ParseArgs(tt.spec, site, syms)
		if err != nil {
			t.Errorf("ParseArgs(%q): %v", tt.spec, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseArgs(%q) =\n%+v\nwant\n%+v", tt.spec, got, tt.want)
		}
	}
}

func TestParseArgsErrors(t *testing.T) {
	syms := func() []elf.Symbol { return []elf.Symbol{{Name: "undefined", Section: elf.SHN_UNDEF}} }
	tests := []struct{ spec, want string }{
		{"3@%eax", `argument 0 "3@%eax": size 3 is not 1, 2, 4 or 8 bytes`},
		{"4@%eax x@%ebx", `argument 1 "x@%ebx": bad size "x"`},
		{"8@%xmm0", `argument 0 "8@%xmm0": unknown register %xmm0`},
		{"8@$five", `argument 0 "8@$five": bad constant "five"`},
		{"8@8(%eax)", `argument 0 "8@8(%eax)": bad address register "%eax"`},
		{"8@8(%rax", `argument 0 "8@8(%rax": unbalanced parentheses`},
		{"8@(%rax,%rbx,3)", `argument 0 "8@(%rax,%rbx,3)": bad scale "3"`},
		{"8@undefined(%rip)", `argument 0 "8@undefined(%rip)": no symbol "undefined" in the file`},
		{"8@%fs:16", `argument 0 "8@%fs:16": unknown register %fs:16`},
		{"8@8+missing(%rax)", `argument 0 "8@8+missing(%rax)": no symbol "missing" in the file`},
		{"1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al 1@%al", "13 arguments, more than the 12 <sys/sdt.h> allows"},
	}
	for _, tt := range tests {
		_, err := ParseArgs(tt.spec, 0, syms)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseArgs(%q) = %v, want %s", tt.spec, err, tt.want)
		}
	}
}

// build compiles testdata/probes.c, skipping without gcc or sys/sdt.h.
func build(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed")
	}
	if _, err := os.Stat("/usr/include/x86_64-linux-gnu/sys/sdt.h"); err != nil {
		if _, err := os.Stat("/usr/include/sys/sdt.h"); err != nil {
			t.Skip("sys/sdt.h is not installed (Debian: systemtap-sdt-dev)")
		}
	}
	bin := filepath.Join(t.TempDir(), "probes")
	if out, err := exec.Command(gcc, "-O1", "-o", bin, "testdata/probes.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

func TestRead(t *testing.T) {
	bin := build(t)
	probes, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range probes {
		names = append(names, p.FullName())
		// sys/sdt.h marks each site with a one-byte nop.
		if data[p.Offset] != 0x90 {
			t.Errorf("%s: byte at offset %#x is %#x, not a nop", p.FullName(), p.Offset, data[p.Offset])
		}
		if p.Semaphore == 0 {
			t.Errorf("%s: no semaphore", p.FullName())
		} else if got := binary.LittleEndian.Uint16(data[p.SemaphoreOffset:]); got != 0 {
			t.Errorf("%s: semaphore at offset %#x holds %d, not 0", p.FullName(), p.SemaphoreOffset, got)
		}
	}
	want := []string{"test:gated", "test:plain", "test:twice", "test:twice"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("probes %v, want %v", names, want)
	}
	if probes[2].Addr == probes[3].Addr || probes[2].Semaphore != probes[3].Semaphore {
		t.Errorf("the two sites of test:twice: addresses %#x and %#x, semaphores %#x and %#x", probes[2].Addr, probes[3].Addr, probes[2].Semaphore, probes[3].Semaphore)
	}
	plain := probes[1].Args
	if len(plain) != 3 || plain[0] != (Arg{Size: 4, Signed: true, Kind: Reg, Reg: "di", RegSize: 4}) || plain[1] != (Arg{Size: 4, Signed: true, Kind: Const, Value: 5}) {
		t.Errorf("test:plain arguments %q decoded as %v", probes[1].ArgSpec, plain)
	}
	// The third is test_counter relative to the site: the two add up to
	// the symbol's address.
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	counter, _ := lookup(mustSymbols(t, ef), "test_counter")
	if got := uint64(int64(probes[1].Addr) + plain[2].Value); plain[2].Reg != "ip" || got != counter {
		t.Errorf("test:plain argument 2 %v locates %#x, want test_counter at %#x", plain[2], got, counter)
	}
}

func mustSymbols(t *testing.T, f *elf.File) []elf.Symbol {
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	return syms
}

// TestReadPrelinked moves the base every note records up by 2, as
// prelink leaves it when it moves .stapsdt.base down: the sites and
// semaphores move down by as much.
func TestReadPrelinked(t *testing.T) {
	bin := build(t)
	before, err := Read(bin)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	base := ef.Section(".stapsdt.base").Addr
	notes := ef.Section(".note.stapsdt")
	ef.Close()
	var word [8]byte
	binary.LittleEndian.PutUint64(word[:], base)
	sec := data[notes.Offset : notes.Offset+notes.Size]
	if n := bytes.Count(sec, word[:]); n != len(before) {
		t.Fatalf("found the base %#x %d times in the notes, want %d", base, n, len(before))
	}
	var moved [8]byte
	binary.LittleEndian.PutUint64(moved[:], base+2)
	copy(sec, bytes.ReplaceAll(sec, word[:], moved[:]))
	patched := filepath.Join(t.TempDir(), "prelinked")
	if err := os.WriteFile(patched, data, 0o755); err != nil {
		t.Fatal(err)
	}
	after, err := Read(patched)
	if err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if after[i].Addr != before[i].Addr-2 || after[i].Offset != before[i].Offset-2 || after[i].Semaphore != before[i].Semaphore-2 {
			t.Errorf("%s: site %#x (offset %#x), semaphore %#x; before the move %#x (%#x), %#x",
				after[i].FullName(), after[i].Addr, after[i].Offset, after[i].Semaphore, before[i].Addr, before[i].Offset, before[i].Semaphore)
		}
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text")
	os.WriteFile(text, []byte("not an ELF file\n"), 0o644)
	if _, err := Read(text); !errors.Is(err, elfsym.ErrNotELF) || err.Error() != text+" is not an ELF file" {
		t.Errorf("Read of a text file: %v", err)
	}
	if _, err := Read(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Read of a missing file: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(self); !errors.Is(err, ErrNoNotes) {
		t.Errorf("Read of the test binary, which has no probes: %v", err)
	}
}
