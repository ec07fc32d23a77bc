package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

func TestParseVersion(t *testing.T) {
	for _, tt := range []struct {
		release      string
		major, minor int
		err          string
	}{
		{"6.12.117+deb12-cloud-amd64", 6, 12, ""},
		{"6.1.0-56-cloud-amd64", 6, 1, ""},
		{"6.18.44-fc-v669", 6, 18, ""},
		{"5.4", 5, 4, ""},
		{"6.9-rc1", 6, 9, ""},
		{"6", 0, 0, `kernel release "6": no major.minor`},
		{"x.1.0", 0, 0, `kernel release "x.1.0": strconv.Atoi: parsing "x": invalid syntax`},
	} {
		major, minor, err := parseVersion(tt.release)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("parseVersion(%q) error = %v, want %s", tt.release, err, tt.err)
			}
			continue
		}
		if err != nil || major != tt.major || minor != tt.minor {
			t.Errorf("parseVersion(%q) = %d, %d, %v; want %d, %d", tt.release, major, minor, err, tt.major, tt.minor)
		}
	}
}

func TestParseConfig(t *testing.T) {
	const text = `#
# Automatically generated file; DO NOT EDIT.
CONFIG_KPROBES=y
# CONFIG_FPROBE is not set
CONFIG_MODULE_X=m
CONFIG_CMDLINE="console=ttyS0"
CONFIG_NR_CPUS=64
`
	cfg, err := parseConfig(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"CONFIG_KPROBES":  "y",
		"CONFIG_FPROBE":   "n",
		"CONFIG_MODULE_X": "m",
		"CONFIG_CMDLINE":  "console=ttyS0",
		"CONFIG_NR_CPUS":  "64",
	}
	if fmt.Sprint(cfg) != fmt.Sprint(want) {
		t.Errorf("parseConfig = %v, want %v", cfg, want)
	}
}

func TestDecide(t *testing.T) {
	info := featureInfo{name: "kprobe.multi", since: version{5, 18}, configs: []string{"CONFIG_FPROBE"}}
	cfgWith := map[string]string{"CONFIG_FPROBE": "y"}
	cfgWithout := map[string]string{"CONFIG_FPROBE": "n"}
	k := func(release string, major, minor int, cfg map[string]string) kernelInfo {
		return kernelInfo{release: release, major: major, minor: minor, config: cfg, configFrom: "/boot/config-" + release}
	}
	notSupported := fmt.Errorf("bpf_link_kprobe_multi: %w", ebpf.ErrNotSupported)
	for _, tt := range []struct {
		name       string
		kernel     kernelInfo
		probe      error
		skip, fail string
		probed     bool
	}{
		{"works", k("6.12.117", 6, 12, cfgWith), nil, "", "", true},
		{"too old", k("5.15.0", 5, 15, cfgWith), nil,
			"kprobe.multi needs Linux 5.18 or later; this is 5.15.0", "", false},
		{"config off", k("6.1.0-56", 6, 1, cfgWithout), nil,
			"kprobe.multi unavailable on Linux 6.1.0-56: CONFIG_FPROBE not set in /boot/config-6.1.0-56", "", false},
		{"config missing option", k("6.1.0-56", 6, 1, map[string]string{}), nil,
			"kprobe.multi unavailable on Linux 6.1.0-56: CONFIG_FPROBE not set in /boot/config-6.1.0-56", "", false},
		{"policy", k("6.18.44", 6, 18, cfgWith), fmt.Errorf("load program: %w", unix.EPERM),
			"kprobe.multi refused by policy (EPERM) on Linux 6.18.44: load program: operation not permitted", "", true},
		{"broken", k("6.12.117", 6, 12, cfgWith), notSupported,
			"", "kprobe.multi must work on Linux 6.12.117 (since 5.18; its configuration has CONFIG_FPROBE) but failed: bpf_link_kprobe_multi: not supported", true},
		{"no config, not supported", kernelInfo{release: "6.5.0", major: 6, minor: 5}, notSupported,
			"kprobe.multi not supported on Linux 6.5.0, which has no readable configuration to say it should be: bpf_link_kprobe_multi: not supported", "", true},
		{"no config, other error", kernelInfo{release: "6.5.0", major: 6, minor: 5}, unix.EINVAL,
			"", "kprobe.multi must work on Linux 6.5.0 (since 5.18; its configuration is unknown) but failed: invalid argument", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			probed := false
			skip, fail := decide(tt.kernel, info, func() error { probed = true; return tt.probe })
			if skip != tt.skip || fail != tt.fail || probed != tt.probed {
				t.Errorf("decide = skip %q, fail %q, probed %v\nwant skip %q, fail %q, probed %v", skip, fail, probed, tt.skip, tt.fail, tt.probed)
			}
		})
	}
}

func TestFeatureString(t *testing.T) {
	if got := KprobeMulti.String(); got != "kprobe.multi" {
		t.Errorf("KprobeMulti.String() = %q", got)
	}
	if got := Feature(99).String(); got != "Feature(99)" {
		t.Errorf("Feature(99).String() = %q", got)
	}
	for f := range numFeatures {
		if features[f].name == "" || features[f].probe == nil {
			t.Errorf("feature %d has no table entry", f)
		}
	}
}

// TestRequire runs every probe on the running kernel: on the host most
// kernel-function features skip with their reason; inside a bench guest they
// must work, and fail the test if they do not.
func TestRequire(t *testing.T) {
	for f := range numFeatures {
		t.Run(f.String(), func(t *testing.T) {
			Require(t, f)
			t.Logf("%s works on Linux %s", f, kernel().release)
		})
	}
}

// TestRequireKnownKernels pins the decisions for the kernels this project
// runs on, so a probe that wrongly passes is caught as well as one that
// wrongly fails.
func TestRequireKnownKernels(t *testing.T) {
	Root(t)
	k := kernel()
	var want map[Feature]string // features expected to be unusable, with a word of the reason
	switch {
	case InGuest() && strings.HasPrefix(k.release, "6.1.0-"):
		want = map[Feature]string{KprobeMulti: "CONFIG_FPROBE not set", KprobeSession: "needs Linux 6.10", UprobeMulti: "needs Linux 6.6"}
	case InGuest() && strings.HasPrefix(k.release, "6.12."):
		want = map[Feature]string{}
	case !InGuest() && k.config["CONFIG_KPROBES"] == "n":
		// The project's host: kprobes compiled out, tracing programs refused.
		want = map[Feature]string{
			Kprobe: "CONFIG_KPROBES", Kretprobe: "CONFIG_KRETPROBES", KprobeMulti: "CONFIG_FPROBE", KprobeSession: "CONFIG_FPROBE",
			Fentry: "EPERM", Fexit: "EPERM", FmodRet: "EPERM",
		}
	default:
		t.Skipf("no known expectations for Linux %s", k.release)
	}
	for f := range numFeatures {
		p := &probes[f]
		skip, fail := decide(k, features[f], func() error {
			p.once.Do(func() { p.err = features[f].probe() })
			return p.err
		})
		if fail != "" {
			t.Errorf("%s: %s", f, fail)
			continue
		}
		reason, unusable := want[f]
		switch {
		case !unusable && errors.Is(p.err, errMachine):
			// The machine, not the kernel, lacks it: a virtual machine
			// without working breakpoints, whichever kernel it runs.
			t.Logf("%s: %s", f, skip)
		case unusable && !strings.Contains(skip, reason):
			t.Errorf("%s: skip reason %q, want one mentioning %q", f, skip, reason)
		case !unusable && skip != "":
			t.Errorf("%s: skipped (%s), want it to work", f, skip)
		}
	}
}

func TestContainsWord(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"console=ttyS1 panic=-1 kinst.vm=1\n", true},
		{"kinst.vm=1", true},
		{"console=ttyS0 kinst.vm=10", false},
		{"BOOT_IMAGE=/vmlinuz root=/dev/sda1", false},
	} {
		if got := containsWord(tt.s, "kinst.vm=1"); got != tt.want {
			t.Errorf("containsWord(%q) = %v", tt.s, got)
		}
	}
}

func TestBuild(t *testing.T) {
	first := Build(t, "./internal/testenv/testdata/hello")
	st1, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	if again := Build(t, "./internal/testenv/testdata/hello"); again != first {
		t.Errorf("second Build = %s, want %s", again, first)
	}
	st2, err := os.Stat(first)
	if err != nil || !st2.ModTime().Equal(st1.ModTime()) {
		t.Errorf("second Build rebuilt the binary (%v)", err)
	}
	out, err := exec.Command(first).Output()
	if err != nil || string(out) != "hello from a testenv build\n" {
		t.Errorf("built binary printed %q, %v", out, err)
	}
}

func TestKinstFromEnvironment(t *testing.T) {
	t.Setenv("KINST_BINARY", "/bin/true")
	if got := Kinst(t); got != "/bin/true" {
		t.Errorf("Kinst = %q, want $KINST_BINARY", got)
	}
}

func TestBusybox(t *testing.T) {
	bb := Busybox(t)
	out, err := exec.Command(bb, "echo", "hi").Output()
	if err != nil || string(out) != "hi\n" {
		t.Errorf("%s echo hi = %q, %v", bb, out, err)
	}
}

func TestProcessesMentioning(t *testing.T) {
	marker := t.TempDir()
	if pids := ProcessesMentioning(marker); len(pids) != 0 {
		t.Fatalf("before start: %v", pids)
	}
	// The shell waits on its standard input in a builtin and forks
	// nothing, so no copy of the command line outlives it.
	cmd := exec.Command("/bin/sh", "-c", "read x", marker)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Start returns once the exec is past its point of no return, but the
	// kernel sets the new command line up a little later: a slow guest
	// shows it empty for a moment.
	pids := ProcessesMentioning(marker)
	for deadline := time.Now().Add(5 * time.Second); len(pids) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		pids = ProcessesMentioning(marker)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if want := fmt.Sprint([]int{cmd.Process.Pid}); fmt.Sprint(pids) != want {
		t.Errorf("while running: %v, want %s", pids, want)
	}
	if pids := ProcessesMentioning(marker); len(pids) != 0 {
		t.Errorf("after exit: %v", pids)
	}
}

func TestGuestKernel(t *testing.T) {
	k := GuestKernel(t, "6.12")
	if !strings.HasPrefix(k.Release, "6.12.") || k.Series != "6.12" {
		t.Errorf("GuestKernel(6.12) = %+v", k)
	}
	if _, err := os.Stat(k.Image); err != nil {
		t.Error(err)
	}
}
