package elfsym

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// sourceProg inlines leaf into mid into outer; the global label mark
// is the instruction of leaf's line 4, and main's call of outer is on
// line 15.
const sourceProg = `
static inline __attribute__((always_inline)) int leaf(int x)
{
	__asm__ volatile(".globl mark\nmark: nop");
	return x + 1;
}
static inline __attribute__((always_inline)) int mid(int x)
{
	return leaf(x) * 2;
}
__attribute__((noinline)) int outer(int x)
{
	return mid(x) + 3;
}
int main(int argc, char **argv) { return outer(argc) == 0; }
`

// TestSource finds the source line of addresses and the functions
// inlined there, innermost first, each at the line the address is at
// within it: the address's own for the innermost, the call of the
// inner one for the others and for the function holding them all.
func TestSource(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc is not installed")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "p.c"), filepath.Join(dir, "p")
	if err := os.WriteFile(src, []byte(sourceProg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O2", "-g", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = s.Value
	}
	d, err := OpenDebug(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		addr uint64
		want Source
	}{
		{"mark", addr["mark"], Source{File: src, Line: 13, Inlined: []Inlined{{"leaf", src, 4}, {"mid", src, 9}}}},
		{"main", addr["main"], Source{File: src, Line: 15}},
		{"outside", 0x10, Source{}},
	} {
		for _, lookup := range []func(uint64) (Source, error){d.Source, f.Source} {
			got, err := lookup(tt.addr)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Source(%s) = %+v, %v; want %+v", tt.name, got, err, tt.want)
			}
		}
	}
}
