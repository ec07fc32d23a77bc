package codegen_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"kinst.dev/kinst/pipeline"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the code generated now")

// TestGolden compares the annotated BPF of every corpus program, as -d
// prints it, with the copy checked in under testdata/golden: a change
// to code generation shows in review as a change of these files.
// go test -run TestGolden -update rewrites them.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*.bt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".bt")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			pipeline.DumpBPF(&got, compile(t, filepath.Base(f), string(src)))
			golden := filepath.Join("testdata", "golden", name+".bpf")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestGolden -update writes it)", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("the BPF of %s differs from %s (go test -run TestGolden -update rewrites it):\n%s", f, golden, lineDiff(string(want), got.String()))
			}
		})
	}
}

// lineDiff shows the first lines where want and got part.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return ""
}
