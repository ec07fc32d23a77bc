package perfetto

import (
	"strconv"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestTrace decodes, with Perfetto's own schema, a trace of two threads
// of one process: nested calls, a call left open at the end, a return
// whose call was not seen, and a call ended by its caller's return.
func TestTrace(t *testing.T) {
	tr := NewTrace()
	tr.clocks = [3]uint64{1000, 2000, 3000}
	app := func(ts uint64, tid int, name string, args ...Arg) Event {
		return Event{Time: ts, Pid: 10, Tid: tid, Comm: "app", Name: name, Args: args}
	}
	var b []byte
	b = tr.AppendBegin(b, app(100, 10, "read", Int("fd", -1), Pointer("buf", 0xff00), String("path", "/x")))
	b = tr.AppendBegin(b, app(110, 10, "copy", Uint("n", 7)))
	b = tr.AppendEnd(b, app(120, 10, "copy", Int("ret", 7)))
	b = tr.AppendEnd(b, app(130, 10, "read", Int("ret", 7)))
	b = tr.AppendBegin(b, app(200, 11, "poll"))
	b = tr.AppendEnd(b, app(210, 10, "close", Int("ret", 0)))
	b = tr.AppendBegin(b, app(300, 10, "outer"))
	b = tr.AppendBegin(b, app(310, 10, "inner"))
	b = tr.AppendEnd(b, app(320, 10, "outer", Bool("ok", true)))
	b = tr.AppendClose(b)
	got := testenv.PerfettoDecode(t, b)
	want := `packet {
  clock_snapshot {
    clocks {
      clock_id: 3
      timestamp: 1000
    }
    clocks {
      clock_id: 6
      timestamp: 2000
    }
    clocks {
      clock_id: 1
      timestamp: 3000
    }
    primary_trace_clock: BUILTIN_CLOCK_BOOTTIME
  }
  timestamp: 2000
  trusted_packet_sequence_id: 1
  sequence_flags: 1
  timestamp_clock_id: 6
}
` + track("process {\n      pid: 10\n      process_name: \"app\"\n    }", 4611686018427387914, 0) +
		track("thread {\n      pid: 10\n      tid: 10\n      thread_name: \"app\"\n    }", 2305843009213693962, 4611686018427387914) +
		event(100, 10, "TYPE_SLICE_BEGIN", "read", `name: "fd"`, `int_value: -1`, `name: "buf"`, `pointer_value: 65280`, `name: "path"`, `string_value: "/x"`) +
		event(110, 10, "TYPE_SLICE_BEGIN", "copy", `name: "n"`, `uint_value: 7`) +
		event(120, 10, "TYPE_SLICE_END", "", `name: "ret"`, `int_value: 7`) +
		event(130, 10, "TYPE_SLICE_END", "", `name: "ret"`, `int_value: 7`) +
		track("thread {\n      pid: 10\n      tid: 11\n      thread_name: \"app\"\n    }", 2305843009213693963, 4611686018427387914) +
		event(200, 11, "TYPE_SLICE_BEGIN", "poll") +
		event(210, 10, "TYPE_INSTANT", "close", `name: "ret"`, `int_value: 0`, `name: "unmatched"`, `string_value: "the call was not seen"`) +
		event(300, 10, "TYPE_SLICE_BEGIN", "outer") +
		event(310, 10, "TYPE_SLICE_BEGIN", "inner") +
		event(320, 10, "TYPE_SLICE_END", "", `name: "unmatched"`, `string_value: "the return was not seen"`) +
		event(320, 10, "TYPE_SLICE_END", "", `name: "ok"`, `bool_value: true`) +
		event(320, 11, "TYPE_SLICE_END", "", `name: "unmatched"`, `string_value: "the return was not seen"`)
	if got != want {
		t.Errorf("decoded trace:\n%s\nwant:\n%s", got, want)
	}
}

// track is the decoded packet of a track descriptor.
func track(desc string, uuid, parent uint64) string {
	s := "packet {\n  trusted_packet_sequence_id: 1\n  track_descriptor {\n    uuid: " + itoa(uuid) + "\n    " + desc + "\n"
	if parent != 0 {
		s += "    parent_uuid: " + itoa(parent) + "\n"
	}
	return s + "  }\n}\n"
}

// event is the decoded packet of a track event; args alternate an
// annotation's name and value lines.
func event(ts uint64, tid int, typ, name string, args ...string) string {
	s := "packet {\n  timestamp: " + itoa(ts) + "\n  trusted_packet_sequence_id: 1\n  track_event {\n"
	for i := 0; i < len(args); i += 2 {
		s += "    debug_annotations {\n      " + args[i+1] + "\n      " + args[i] + "\n    }\n"
	}
	s += "    type: " + typ + "\n    track_uuid: " + itoa(2305843009213693952+uint64(tid)) + "\n"
	if name != "" {
		s += "    name: \"" + name + "\"\n"
	}
	return s + "  }\n  timestamp_clock_id: 3\n}\n"
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
