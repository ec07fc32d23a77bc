package instruments_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// packetField reads the first field of a decoded packet called name,
// at the indentation of a field of a message in the packet, where track
// events and descriptors have theirs: "    name: value".
func packetField(packet, name string) string {
	m := regexp.MustCompile(`(?m)^(?:  |    |      )` + name + `: (.*)$`).FindStringSubmatch(packet)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestTracePerfetto traces n calls of the workload into a Perfetto
// trace, which Perfetto's schema decodes: the workload's process and
// thread tracks with its name, then n slices begun and ended on that
// thread, in turn, each begun with the call's arguments and ended with
// its return value: 2i+1 from main.callee, the parent's pid (kinst's)
// from getppid.
func TestTracePerfetto(t *testing.T) {
	const n = 5
	w := testenv.Workload(t)
	tests := []struct {
		name    string
		feature testenv.Feature
		target  string
		work    string
		fn      string
		arg     string // an argument every begin carries, "" for none
		ret     func(i, kinst int) string
	}{
		{"uprobe", testenv.Uprobe, "uprobe:" + w + ":main.callee", "call", "main.callee", "arg0",
			func(i, _ int) string { return fmt.Sprint(2*i + 1) }},
		{"syscall", testenv.Tracepoint, "syscall:getppid", "getppid", "getppid", "",
			func(_, kinst int) string { return fmt.Sprint(kinst) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testenv.Require(t, tt.feature)
			file := filepath.Join(t.TempDir(), "calls.pftrace")
			stdout, stderr, kinstPid := runKinst(t, "trace", "-q", "--args", "-f", "perfetto", "-o", file, "-c", fmt.Sprintf("%s %s %d", w, tt.work, n), tt.target)
			if stdout != "" || stderr != "" {
				t.Fatalf("stdout %q, stderr %q", stdout, stderr)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			checkPerfetto(t, testenv.PerfettoDecode(t, data), n, fmt.Sprintf("%q", tt.fn), tt.arg, func(i int) string { return tt.ret(i, kinstPid) })
		})
	}
}

// checkPerfetto checks a decoded trace of n calls of fn by one thread of
// the workload.
func checkPerfetto(t *testing.T, decoded string, n int, fn, arg string, ret func(i int) string) {
	t.Helper()
	packets := strings.Split(decoded, "packet {\n")[1:]
	if len(packets) != 3+2*n {
		t.Fatalf("%d packets, want a clock snapshot, 2 track descriptors and %d events:\n%s", len(packets), 2*n, decoded)
	}
	if !strings.Contains(packets[0], "clock_snapshot {") {
		t.Errorf("first packet is not the clock snapshot:\n%s", packets[0])
	}
	comm := fmt.Sprintf("%q", workloadComm(t))
	pid := packetField(packets[1], "pid")
	if !strings.Contains(packets[1], "process {") || packetField(packets[1], "process_name") != comm {
		t.Errorf("second packet is not the workload's process track:\n%s", packets[1])
	}
	thread := packetField(packets[2], "uuid")
	if !strings.Contains(packets[2], "thread {") || packetField(packets[2], "pid") != pid ||
		packetField(packets[2], "thread_name") != comm || packetField(packets[2], "parent_uuid") != packetField(packets[1], "uuid") {
		t.Errorf("third packet is not a thread track of the workload's process:\n%s", packets[2])
	}
	var last string
	for i, p := range packets[3:] {
		typ, name := "TYPE_SLICE_BEGIN", fn
		if i%2 == 1 {
			typ, name = "TYPE_SLICE_END", ""
		}
		ts := packetField(p, "timestamp")
		if packetField(p, "type") != typ || packetField(p, "track_uuid") != thread || eventName(p) != name ||
			packetField(p, "timestamp_clock_id") != "3" || len(ts) < len(last) || len(ts) == len(last) && ts < last {
			t.Fatalf("event %d is not a %s of %s on thread track %s after %s:\n%s", i, typ, name, thread, last, p)
		}
		last = ts
		switch {
		case i%2 == 1:
			if packetField(p, "int_value") != ret(i/2) || !strings.Contains(p, `name: "ret"`) {
				t.Errorf("end %d does not carry ret = %s:\n%s", i/2, ret(i/2), p)
			}
		case arg != "" && !strings.Contains(p, `name: "`+arg+`"`):
			t.Errorf("begin %d does not carry %s:\n%s", i/2, arg, p)
		case arg == "" && strings.Contains(p, "debug_annotations"):
			t.Errorf("begin %d carries arguments the call has not:\n%s", i/2, p)
		}
	}
}

// eventName is the name of a decoded track event, "" for none.
func eventName(packet string) string {
	m := regexp.MustCompile(`(?m)^    name: (.*)$`).FindStringSubmatch(packet)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestTracePerfettoNeedsFile(t *testing.T) {
	stdout, stderr, code := kinst(t, "trace", "-f", "perfetto", "syscall:getppid")
	if code != 2 || stdout != "" || stderr != "kinst trace: -f perfetto writes a binary trace: give -o FILE\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
