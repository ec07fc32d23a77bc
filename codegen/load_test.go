package codegen_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// compile runs the front end and code generation on src.
func compile(t *testing.T, name, src string) *codegen.Output {
	t.Helper()
	prog, err := syntax.Parse(name, []byte(src))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	checked, err := check.Check(prog, &check.Config{Resolver: &attach.Resolver{}, Params: []string{"7", "str"}, Unsafe: true})
	if err != nil {
		var list syntax.ErrorList
		if errors.As(err, &list) {
			t.Fatalf("check:\n%s", list.Detail())
		}
		t.Fatalf("check: %v", err)
	}
	// A program that needs bpf_loop gets what needs it.
	hasLoop := func() bool { return requirement(src) == "loop" }
	out, err := codegen.Generate(checked, &codegen.Options{EventsSize: 1 << 16, MapEntries: 64, HasLoop: hasLoop})
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	return out
}

// TestCorpusLoads loads every program of testdata/corpus into the
// running kernel: the verifier must accept each one.
func TestCorpusLoads(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root")
	}
	files, err := filepath.Glob("testdata/corpus/*.bt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if needs := requirement(string(src)); needs != "" {
				if st := kernel.Probe(mustFeature(t, needs)); !st.Available {
					t.Skipf("needs %s: %s", needs, st.Reason)
				}
			}
			out := compile(t, f, string(src))
			coll, err := ebpf.NewCollectionWithOptions(out.Collection, ebpf.CollectionOptions{})
			if err != nil {
				var ve *ebpf.VerifierError
				if errors.As(err, &ve) {
					t.Fatalf("verifier: %+v", ve)
				}
				t.Fatal(err)
			}
			coll.Close()
		})
	}
}

// requirement reads a "// needs: FEATURE" line.
func requirement(src string) string {
	for _, line := range strings.Split(src, "\n") {
		if s, ok := strings.CutPrefix(line, "// needs: "); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

func mustFeature(t *testing.T, name string) kernel.Feature {
	f, err := kernel.ParseFeature(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
