package kernel

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

func TestParseFilterFunctions(t *testing.T) {
	text := "vfs_read\nkvm_init [kvm]\n\nvfs_read\ndo_one [mod_a]\ndo_one\n  trailing_space  \n"
	got := ParseFilterFunctions([]byte(text))
	want := []Func{{"do_one", ""}, {"do_one", "mod_a"}, {"kvm_init", "kvm"}, {"trailing_space", ""}, {"vfs_read", ""}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseFilterFunctions = %v, want %v", got, want)
	}
	l := &FuncList{Source: SourceFilterFunctions, Funcs: got}
	if m := l.Match("*_one"); !reflect.DeepEqual(m, []Func{{"do_one", ""}, {"do_one", "mod_a"}}) {
		t.Errorf("Match(*_one) = %v", m)
	}
	if !l.Contains("kvm_init") || !l.Contains("do_one") || l.Contains("vfs_write") || l.Contains("") {
		t.Error("Contains gives wrong answers")
	}
}

func TestTraceableFunctions(t *testing.T) {
	testenv.Root(t)
	l, err := TraceableFunctions()
	if err != nil {
		t.Fatal(err)
	}
	// Which source must have been used: the tracefs file when it can be
	// read (this host refuses it with EPERM), else BTF and kallsyms.
	dir, err := TracefsDir()
	if err != nil {
		t.Fatal(err)
	}
	_, readErr := os.ReadFile(filepath.Join(dir, "available_filter_functions"))
	want := SourceFilterFunctions
	if readErr != nil {
		want = SourceBTFKallsyms
	}
	if l.Source != want {
		t.Errorf("Source = %q, want %q (reading the file gave %v)", l.Source, want, readErr)
	}
	for _, name := range []string{"vfs_read", "do_nanosleep", "security_file_open"} {
		if !l.Contains(name) {
			t.Errorf("%s is not traceable", name)
		}
	}
	for _, f := range l.Funcs {
		if strings.HasPrefix(f.Name, "__pfx_") {
			t.Fatalf("padding symbol %s listed as a function", f.Name)
		}
	}
	if len(l.Funcs) < 10000 {
		t.Errorf("only %d traceable functions", len(l.Funcs))
	}
}
