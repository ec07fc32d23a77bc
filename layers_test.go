package kinst_test

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers lists kinst's packages from the bottom up, in the order of the
// pipeline: a package may import only packages of the layers below its
// own. Facts about the system and the formats come first, then each
// stage (source → syntax tree → checked program → BPF → attached probes
// → a run), then the API and what is built on it, and last the tools
// the tests and benchmarks use.
var layers = [][]string{
	{"compat", "cconst", "syntax", "bpfelf", "output/pcap", "internal/pbwire", "internal/coredump",
		"internal/spell", "internal/inject", "internal/hwbp", "internal/chunked", "internal/vm", "instruments/internal/cfg"},
	{"kernel", "preprocess", "output", "export/perfetto", "internal/vm/guestinit", "instruments/internal/cfg/cfgtest"},
	{"elfsym"},
	{"usdt", "export/pprof"},
	{"check"},
	{"codegen", "attach", "internal/hint"},
	{"pipeline", "session", "export/prom"},
	{""}, // the API, package kinst
	{"instruments"},
	{"cmd/kinst", "cmd/vmrun", "bench", "internal/testenv", "internal/workload", "internal/difftest", "internal/vm/guesttest"},
}

// TestLayers fails when a package imports one of its own layer or of a
// layer above, or when a package is in no layer.
func TestLayers(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("listing the packages needs the go command: %v", err)
	}
	const module = "kinst.dev/kinst"
	layer := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layer[strings.TrimSuffix(module+"/"+p, "/")] = i
		}
	}
	cmd := exec.Command(goCmd, "list", "-json", module+"/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(out)
	for {
		var pkg struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&pkg); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		l, ok := layer[pkg.ImportPath]
		if !ok {
			t.Errorf("%s is in no layer: add it to layers in layers_test.go", pkg.ImportPath)
			continue
		}
		for _, imp := range pkg.Imports {
			il, ours := layer[imp]
			if !ours && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if il >= l {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only those below its layer", pkg.ImportPath, l, imp, il)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(slices.Concat(layers...)); n != len(layer) {
		t.Errorf("layers names %d packages, %d of them distinct", n, len(layer))
	}
}
