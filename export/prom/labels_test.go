package prom_test

import (
	"reflect"
	"testing"

	"kinst.dev/kinst/export/prom"
	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/pipeline"
)

func TestKeyLabels(t *testing.T) {
	testenv.Require(t, testenv.Tracepoint)
	src := `
tracepoint:syscalls:sys_enter_read { @reads[args->fd, comm] = count(); @bytes[comm] = sum(args->count); }
BEGIN {
	$fd = 3; $s = "x"; $le = 1; $key1 = 2;
	@byvar[$fd, 1] = count();
	@called[str($s)] = 1;
	@mixed[comm] = 1;
	@mixed[$s] = 2;
	@twice[pid, pid] = 1;
	@reserved[$le] = 1;
	@place[$key1, pid] = 1;
	@none = 1;
}`
	out, err := pipeline.Compile("labels.bt", []byte(src), &pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := prom.KeyLabels(out)
	want := map[string][]string{
		"@reads":    {"fd", "comm"},
		"@bytes":    {"comm"},
		"@byvar":    {"fd", "key1"},   // a literal has no name
		"@called":   {"s"},            // str($s) reads $s
		"@mixed":    {"key"},          // comm at one place, $s at the other
		"@twice":    {"key0", "key1"}, // pid twice
		"@reserved": {"key"},          // le is the histograms' label
		"@place":    {"key0", "pid"},  // key1 is pid's place name
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("KeyLabels:\n got %v\nwant %v", got, want)
	}
}
