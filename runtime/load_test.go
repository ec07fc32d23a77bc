package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/pipeline"
	"kinst.dev/kinst/runtime"
)

// TestVerifierRejection loads a loop the verifier cannot bound: the
// error names the probe, points at the loop, and says what went wrong.
func TestVerifierRejection(t *testing.T) {
	testenv.Root(t)
	src := "BEGIN { $i = 0; while ($i < 100000000) { $i = $i + nsecs % 2; } exit(); }"
	out, err := pipeline.Compile("-e", []byte(src), &pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = runtime.Load(out, &runtime.Options{})
	var ve *runtime.VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a VerifierError", err)
	}
	want := "-e:1:24: the kernel verifier rejected probe BEGIN: this loop may never end: the verifier cannot see its condition become false (infinite loop detected at insn "
	if got := ve.Error(); !strings.HasPrefix(got, want) {
		t.Errorf("got  %s\nwant %s…", got, want)
	}
	if d := ve.Detail(true); !strings.Contains(d, "verifier log (last lines):") || !strings.Contains(d, "\n"+src+"\n") {
		t.Errorf("verbose detail lacks the source line or the log:\n%s", d)
	}
}
