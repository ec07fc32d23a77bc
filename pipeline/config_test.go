package pipeline

import (
	"testing"

	"github.com/cilium/ebpf"

	"kinst.dev/kinst/internal/testenv"
)

// TestDeclaredMaps: a map declaration gives the kernel map its type and
// size, and max_map_keys in a config block sizes the others.
func TestDeclaredMaps(t *testing.T) {
	testenv.Root(t)
	src := `config = { max_map_keys = 9 }
let @m = lruhash(5); let @c = percpulruhash(7); let @h = percpuhash(3);
BEGIN { @m[1] = 1; @c = count(); @h = hist(2); @plain[1] = 2; @agg = sum(1); exit(); }`
	out, err := Compile("t", []byte(src), &Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		typ     ebpf.MapType
		entries uint32
	}{
		"@m": {ebpf.LRUHash, 5}, "@c": {ebpf.LRUCPUHash, 7}, "@h": {ebpf.PerCPUHash, 3},
		"@plain": {ebpf.Hash, 9}, "@agg": {ebpf.PerCPUHash, 9},
	}
	for _, m := range out.Maps {
		spec := out.Collection.Maps[m.Spec]
		w := want[m.Display()]
		if spec.Type != w.typ || spec.MaxEntries != w.entries {
			t.Errorf("%s: %v of %d entries, want %v of %d", m.Display(), spec.Type, spec.MaxEntries, w.typ, w.entries)
		}
		delete(want, m.Display())
	}
	if len(want) != 0 {
		t.Errorf("maps missing: %v", want)
	}
}
