package kernel

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

const sampleKallsyms = `ffffffff81000000 T srso_alias_untrain_ret
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000130 T entry_SYSCALL_64_after_hwframe
ffffffff81200100 t __pfx_do_one
ffffffff81200110 t do_one
ffffffff81200200 W abort
ffffffff82400000 D __start_rodata
ffffffffc0201000 t ftrace_trampoline	[__builtin__ftrace]
ffffffffc0300000 t kvm_init	[kvm]
ffffffffc0300100 T kvm_exit	[kvm]
ffffffffc0100000 t do_one	[mod_a]
`

func TestParseKallsyms(t *testing.T) {
	ks, err := ParseKallsyms([]byte(sampleKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	if ks.Len() != 12 {
		t.Fatalf("Len() = %d, want 12", ks.Len())
	}
	if !slices.IsSortedFunc(ks.Symbols(), func(a, b KSym) int { return compareAddr(a.Addr, b.Addr) }) {
		t.Error("symbols not sorted by address")
	}
	lookups := []struct {
		addr   uint64
		sym    string
		off    uint64
		module string
		ok     bool
	}{
		{0xffffffff80ffffff, "", 0, "", false},
		{0xffffffff81000000, "_text", 0, "", true}, // the last of three aliases, as bpftrace shows
		{0xffffffff81000005, "_text", 5, "", true},
		{0xffffffff810001a6, "entry_SYSCALL_64_after_hwframe", 118, "", true},
		{0xffffffff8120010f, "__pfx_do_one", 15, "", true},
		{0xffffffff81200110, "do_one", 0, "", true},
		{0xffffffff81200201, "abort", 1, "", true},
		{0xffffffffc0100004, "do_one", 4, "mod_a", true}, // module symbols listed out of order
		{0xffffffffc0300150, "kvm_exit", 0x50, "kvm", true},
	}
	for _, l := range lookups {
		sym, off, ok := ks.Lookup(l.addr)
		if ok != l.ok || sym.Name != l.sym || off != l.off || sym.Module != l.module {
			t.Errorf("Lookup(%#x) = %q+%d [%s] %v, want %q+%d [%s] %v", l.addr, sym.Name, off, sym.Module, ok, l.sym, l.off, l.module, l.ok)
		}
	}
	formats := []struct {
		addr        uint64
		sym, symOff string
	}{
		{0x1234, "0x1234", "0x1234"},
		{0xffffffff81000005, "_text", "_text+5"},
		{0xffffffff810001a6, "entry_SYSCALL_64_after_hwframe", "entry_SYSCALL_64_after_hwframe+118"},
		{0xffffffffc0300100, "kvm_exit", "kvm_exit+0"},
	}
	for _, f := range formats {
		if got := ks.Sym(f.addr); got != f.sym {
			t.Errorf("Sym(%#x) = %q, want %q", f.addr, got, f.sym)
		}
		if got := ks.SymOff(f.addr); got != f.symOff {
			t.Errorf("SymOff(%#x) = %q, want %q", f.addr, got, f.symOff)
		}
	}
	if a, ok := ks.Address("do_one"); !ok || a != 0xffffffff81200110 {
		t.Errorf("Address(do_one) = %#x, %v; want the lowest, 0xffffffff81200110", a, ok)
	}
	if _, ok := ks.Address("nosuch"); ok {
		t.Error("Address(nosuch) found something")
	}
	both := ks.ByName("do_one")
	if len(both) != 2 || both[0].Module != "" || both[1].Module != "mod_a" || both[1].Addr != 0xffffffffc0100000 {
		t.Errorf("ByName(do_one) = %+v", both)
	}
	if got, want := ks.Functions("*"), []string{"__pfx_do_one", "_stext", "_text", "abort", "do_one",
		"entry_SYSCALL_64_after_hwframe", "ftrace_trampoline", "kvm_exit", "kvm_init", "srso_alias_untrain_ret"}; !slices.Equal(got, want) {
		t.Errorf("Functions(*) = %v, want %v", got, want)
	}
	if got, want := ks.Functions("kvm_*"), []string{"kvm_exit", "kvm_init"}; !slices.Equal(got, want) {
		t.Errorf("Functions(kvm_*) = %v, want %v", got, want)
	}
}

func compareAddr(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestParseKallsymsErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"xyz T foo\n", `kallsyms line 1: bad address in "xyz T foo"`},
		{"ffffffff81000000 T foo\nffffffff81000000T\n", `kallsyms line 2: bad address in "ffffffff81000000T"`},
		{"ffffffff81000000 T foo\nffffffff81000000 T\n", `kallsyms line 2: malformed line "ffffffff81000000 T"`},
		{"ffffffff81000000\n", `kallsyms line 1: malformed line "ffffffff81000000"`},
		{"ffffffff81000000 T \n", `kallsyms line 1: no symbol name in "ffffffff81000000 T "`},
		{"1ffffffff81000000 T foo\n", `kallsyms line 1: address too long in "1ffffffff81000000 T foo"`},
	}
	for _, tt := range tests {
		_, err := ParseKallsyms([]byte(tt.text))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseKallsyms(%q) error = %v, want %q", tt.text, err, tt.want)
		}
	}
	_, err := ParseKallsyms([]byte("0000000000000000 T _text\n0000000000000000 T vfs_read\n"))
	if !errors.Is(err, ErrRestricted) {
		t.Errorf("all-zero table: error = %v, want ErrRestricted", err)
	}
	ks, err := ParseKallsyms(nil)
	if err != nil || ks.Len() != 0 {
		t.Errorf("empty table: %v, %v", ks, err)
	}
	if s, _, ok := ks.Lookup(1); ok {
		t.Errorf("Lookup in an empty table found %v", s)
	}
}

// kallsymsLine finds name's first function line in /proc/kallsyms by a
// plain scan, independently of the parser.
func kallsymsLine(t *testing.T, name string) (addr uint64, typ string) {
	t.Helper()
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 3 && fields[2] == name {
			a, err := strconv.ParseUint(fields[0], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return a, fields[1]
		}
	}
	t.Fatalf("%s not in /proc/kallsyms", name)
	return 0, ""
}

func TestLoadKallsyms(t *testing.T) {
	testenv.Root(t)
	ks, err := LoadKallsyms()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := LoadKallsyms()
	if again != ks {
		t.Error("LoadKallsyms parsed the table twice")
	}
	// kernels.md: these are in the kallsyms of every kernel kinst meets.
	for _, name := range []string{"vfs_read", "do_nanosleep", "security_file_open"} {
		want, typ := kallsymsLine(t, name)
		addr, ok := ks.Address(name)
		if !ok || addr != want {
			t.Errorf("Address(%s) = %#x, %v; /proc/kallsyms says %#x", name, addr, ok, want)
		}
		if got := ks.Sym(addr); got != name {
			t.Errorf("Sym(%#x) = %q, want %q", addr, got, name)
		}
		if got := ks.SymOff(addr + 3); got != name+"+3" {
			t.Errorf("SymOff(%#x) = %q, want %q", addr+3, got, name+"+3")
		}
		if typ != "t" && typ != "T" {
			t.Errorf("%s has type %s", name, typ)
		}
		if !slices.Contains(ks.Functions(name[:4]+"*"), name) {
			t.Errorf("Functions(%s*) lacks %s", name[:4], name)
		}
	}
}

func BenchmarkLoadKallsyms(b *testing.B) {
	testenv.Root(b)
	for b.Loop() {
		text, err := readKallsyms()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := parseKallsyms(text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadKallsyms(b *testing.B) {
	testenv.Root(b)
	for b.Loop() {
		if _, err := readKallsyms(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseKallsyms(b *testing.B) {
	testenv.Root(b)
	text, err := readKallsyms()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := parseKallsyms(text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKallsymsLookup(b *testing.B) {
	testenv.Root(b)
	ks, err := LoadKallsyms()
	if err != nil {
		b.Fatal(err)
	}
	addr, ok := ks.Address("vfs_read")
	if !ok {
		b.Fatal("no vfs_read")
	}
	for b.Loop() {
		if ks.SymOff(addr+17) != "vfs_read+17" {
			b.Fatal("wrong symbol")
		}
	}
}

func BenchmarkKallsymsAddress(b *testing.B) {
	testenv.Root(b)
	ks, err := LoadKallsyms()
	if err != nil {
		b.Fatal(err)
	}
	ks.Address("vfs_read") // build the name index outside the loop
	for b.Loop() {
		if _, ok := ks.Address("vfs_read"); !ok {
			b.Fatal("no vfs_read")
		}
	}
}
