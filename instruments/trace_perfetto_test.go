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

// TestTracePerfetto traces n calls of the workload's main.callee into a
// Perfetto trace, which Perfetto's schema decodes: the workload's
// process and thread tracks with its name, then n slices begun and
// ended on that thread, in turn, each ended with the call's return
// value 2i+1.
func TestTracePerfetto(t *testing.T) {
	testenv.Require(t, testenv.Uprobe)
	const n = 5
	w := testenv.Workload(t)
	file := filepath.Join(t.TempDir(), "calls.pftrace")
	stdout, stderr, _ := runKinst(t, "trace", "-q", "--args", "-f", "perfetto", "-o", file, "-c", fmt.Sprintf("%s call %d", w, n), "uprobe:"+w+":main.callee")
	if stdout != "" || stderr != "" {
		t.Fatalf("stdout %q, stderr %q", stdout, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	decoded := testenv.PerfettoDecode(t, data)
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
		typ, name, ret := "TYPE_SLICE_BEGIN", `"main.callee"`, ""
		if i%2 == 1 {
			typ, name, ret = "TYPE_SLICE_END", "", fmt.Sprint(i)
		}
		ts := packetField(p, "timestamp")
		if packetField(p, "type") != typ || packetField(p, "track_uuid") != thread || eventName(p) != name ||
			packetField(p, "timestamp_clock_id") != "3" || len(ts) < len(last) || len(ts) == len(last) && ts < last {
			t.Fatalf("event %d is not a %s of %s on thread track %s after %s:\n%s", i, typ, name, thread, last, p)
		}
		last = ts
		if ret != "" && (packetField(p, "int_value") != ret || !strings.Contains(p, `name: "ret"`)) {
			t.Errorf("end %d does not carry ret = %s:\n%s", i/2, ret, p)
		}
		if ret == "" && !strings.Contains(p, `name: "arg0"`) {
			t.Errorf("begin %d does not carry the arguments:\n%s", i/2, p)
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
