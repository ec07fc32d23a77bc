package vm

import (
	"fmt"
	"strconv"
	"strings"
)

// What the runner and the guest's /init agree on.
const (
	// GuestBinDir holds the extra files; it comes first on the guest's PATH.
	GuestBinDir = "/vmrun/bin"
	// GuestSpecPath holds the JSON-encoded Spec.
	GuestSpecPath = "/vmrun/spec.json"
	// GuestPATH is the PATH the guest command runs with.
	GuestPATH = GuestBinDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// GuestConsole carries the command's stdout and stderr.
	GuestConsole = "/dev/ttyS0"
	// GuestStatusPort carries the status line.
	GuestStatusPort = "/dev/ttyS2"
	// GuestMarker is a word on the guest kernel's command line by which
	// code can tell that it runs inside the bench (see testenv.InGuest).
	GuestMarker = "kinst.vm=1"
)

// A Spec tells the guest's /init what to run.
type Spec struct {
	Args []string `json:"args"` // Args[0] is a guest path or a name on GuestPATH; none for a probe boot
	Dir  string   `json:"dir"`  // working directory
	Env  []string `json:"env"`  // environment besides PATH and HOME
}

// A Status is how the guest command ended, as /init reports it.
type Status struct {
	Exit   int // exit code, when Signal is 0
	Signal int // the signal that killed the command, or 0
}

const statusPrefix = "vmrun-status "

// String returns the status line /init writes to GuestStatusPort.
func (s Status) String() string {
	if s.Signal != 0 {
		return fmt.Sprintf("%ssignal %d\n", statusPrefix, s.Signal)
	}
	return fmt.Sprintf("%sexit %d\n", statusPrefix, s.Exit)
}

// parseStatus finds the status line in what the status port received.
func parseStatus(data string) (Status, bool) {
	for line := range strings.Lines(data) {
		rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), statusPrefix)
		if !ok {
			continue
		}
		kind, num, _ := strings.Cut(rest, " ")
		n, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		switch kind {
		case "exit":
			return Status{Exit: n}, true
		case "signal":
			return Status{Signal: n}, true
		}
	}
	return Status{}, false
}
