package session_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/pipeline"
	"kinst.dev/kinst/session"
)

// TestDroppedStacks gives the kernel-stack map one slot: every stack
// but the first to take it is dropped, and the warning counts exactly
// the events whose stack came out empty. The program ends itself: its
// probes are detached before the count is read and the maps printed.
func TestDroppedStacks(t *testing.T) {
	testenv.Require(t, testenv.Ringbuf)
	out, err := pipeline.Compile("-e", []byte("tracepoint:sched:sched_switch { @[kstack] = count(); } interval:ms:200 { exit(); }"), &pipeline.Options{StackEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	var empty uint64
	err = session.Run(context.Background(), out, &session.Options{Stderr: &stderr, ExitMaps: func(_ io.Writer, maps []*output.Map) ([]*output.Map, error) {
		for _, e := range maps[0].Entries {
			if len(e.Key[0].Frames()) == 0 {
				empty += e.Value.Uint()
			}
		}
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if empty == 0 {
		t.Fatalf("no stack was dropped (%v); stderr:\n%s", err, &stderr)
	}
	want := fmt.Sprintf("Attached 2 probes\nkinst: warning: %d stacks dropped: the stack map's slot for them held another stack, or the map was full; they print empty\n", empty)
	if stderr.String() != want {
		t.Errorf("run: %v; stderr:\n%s\nwant:\n%s", err, &stderr, want)
	}
}
