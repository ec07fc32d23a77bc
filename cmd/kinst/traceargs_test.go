package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestTraceArgsDWARF: kinst trace --args on a uprobe of a C binary with
// DWARF logs the arguments by name and type; the registers are logged
// only where the binary has no DWARF.
func TestTraceArgsDWARF(t *testing.T) {
	testenv.Require(t, testenv.Uprobe)
	bin := target(t)
	r := kinst(t, "trace", "-q", "-f", "json", "--args", "-c", bin+" write 3 5", "uprobe:"+bin+":write_size")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var got []map[string]int
	for line := range strings.Lines(r.stdout) {
		var e struct {
			Event string
			Args  map[string]int
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if e.Event == "entry" {
			got = append(got, e.Args)
		}
	}
	// The file descriptor of /dev/null is 3 in a process that has only
	// its three standard ones.
	want := []map[string]int{{"fd": 3, "size": 3}, {"fd": 3, "size": 5}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries logged arguments %v, want %v\n%s", got, want, r.stdout)
	}
}
