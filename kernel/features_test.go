package kernel

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
)

func TestFeatureNames(t *testing.T) {
	all := Features()
	if len(all) != int(numFeatures) {
		t.Fatalf("Features() has %d items, want %d", len(all), numFeatures)
	}
	if all[0] != FeatBTF || all[len(all)-1] != FeatBoundedLoops || all[FeatKprobe] != FeatKprobe {
		t.Errorf("Features() order changed: %v", all)
	}
	seen := map[string]bool{}
	for _, f := range all {
		name := f.String()
		if name == "" || seen[name] || strings.ContainsAny(name, " .-") {
			t.Errorf("feature %d has a bad or repeated name %q", int(f), name)
		}
		seen[name] = true
		g, err := ParseFeature(name)
		if err != nil || g != f {
			t.Errorf("ParseFeature(%q) = %v, %v", name, g, err)
		}
		if featureInfos[f].what == "" {
			t.Errorf("feature %s has no subject", name)
		}
	}
	if _, err := ParseFeature("kprobes"); err == nil || err.Error() != `unknown kernel feature "kprobes"` {
		t.Errorf("ParseFeature(kprobes) error = %v", err)
	}
	if got := Feature(99).String(); got != "Feature(99)" {
		t.Errorf("Feature(99).String() = %q", got)
	}
	if st := Probe(Feature(99)); st.Available || st.Reason != "unknown feature 99" {
		t.Errorf("Probe(99) = %+v", st)
	}
}

func TestStatusJSON(t *testing.T) {
	st := []Status{
		{Feature: FeatKprobe, Reason: "kprobes are not available: this kernel was built without CONFIG_KPROBES"},
		{Feature: FeatLockdown, Available: true, Value: "integrity"},
	}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"kprobe","available":false,"reason":"kprobes are not available: this kernel was built without CONFIG_KPROBES"},` +
		`{"name":"lockdown","available":true,"value":"integrity"}]`
	if string(data) != want {
		t.Errorf("JSON = %s\nwant   %s", data, want)
	}
	var back []Status
	if err := json.Unmarshal(data, &back); err != nil || back[0] != st[0] || back[1] != st[1] {
		t.Errorf("round trip = %+v, %v", back, err)
	}
	if _, err := json.Marshal(Status{Feature: -1}); err == nil {
		t.Error("marshalling Feature(-1) succeeded")
	}
}

func TestReasons(t *testing.T) {
	testenv.Root(t) // fromErr words EPERM differently for the unprivileged
	tests := []struct {
		f    Feature
		err  error
		want Status
	}{
		{FeatFentry, nil, Status{Feature: FeatFentry, Available: true}},
		{FeatFentry, fmt.Errorf("load program: %w", unix.EPERM), Status{Feature: FeatFentry, Reason: "fentry programs are refused by this kernel's policy (EPERM)"}},
		{FeatLoop, fmt.Errorf("probe: %w", ebpf.ErrNotSupported), Status{Feature: FeatLoop, Reason: "the bpf_loop helper is not supported by this kernel"}},
		{FeatRingBuf, unix.EINVAL, Status{Feature: FeatRingBuf, Reason: "ring buffer maps are not supported by this kernel"}},
		{FeatUprobe, errors.New("boom"), Status{Feature: FeatUprobe, Reason: "uprobes are not available: probing failed: boom"}},
	}
	for _, tt := range tests {
		if got := tt.f.fromErr(tt.err); got != tt.want {
			t.Errorf("%v.fromErr(%v) = %+v, want %+v", tt.f, tt.err, got, tt.want)
		}
	}
	if got, want := FeatKprobe.no("this kernel was built without CONFIG_KPROBES").Reason,
		"kprobes are not available: this kernel was built without CONFIG_KPROBES"; got != want {
		t.Errorf("no() = %q, want %q", got, want)
	}
	if got, want := FeatOverrideReturn.no("x").Reason, "the bpf_override_return helper is not available: x"; got != want {
		t.Errorf("no() = %q, want %q", got, want)
	}
	if got, want := why(Status{Reason: "uprobes are not available: this kernel was built without CONFIG_UPROBES"}),
		"this kernel was built without CONFIG_UPROBES"; got != want {
		t.Errorf("why() = %q, want %q", got, want)
	}
}

func TestLockdownMode(t *testing.T) {
	for in, want := range map[string]string{
		"[none] integrity confidentiality\n": "none",
		"none [integrity] confidentiality\n": "integrity",
		"none integrity [confidentiality]":   "confidentiality",
		"odd\n":                              "odd",
	} {
		if got := lockdownMode(in); got != want {
			t.Errorf("lockdownMode(%q) = %q, want %q", in, got, want)
		}
	}
}

// projectHost reports whether this is the project's 6.18 host kernel,
// judged by evidence: its version and its configuration without kprobes.
func projectHost(t *testing.T) bool {
	v, err := KernelVersion()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig()
	return err == nil && v.Major == 6 && v.Minor == 18 && cfg.Disabled("CONFIG_KPROBES")
}

func TestProbeConfigReasons(t *testing.T) {
	testenv.Root(t)
	cfg, err := LoadConfig()
	if err != nil {
		t.Skipf("no kernel configuration to judge by: %v", err)
	}
	tests := []struct {
		f      Feature
		option string
		reason string
	}{
		{FeatKprobe, "CONFIG_KPROBES", "kprobes are not available: this kernel was built without CONFIG_KPROBES"},
		{FeatKretprobe, "CONFIG_KPROBES", "kretprobes are not available: this kernel was built without CONFIG_KPROBES"},
		{FeatKprobeMulti, "CONFIG_FPROBE", "kprobe.multi links are not available: this kernel was built without CONFIG_FPROBE"},
		{FeatKprobeSession, "CONFIG_FPROBE", "kprobe session links are not available: this kernel was built without CONFIG_FPROBE"},
		{FeatOverrideReturn, "CONFIG_FUNCTION_ERROR_INJECTION", "the bpf_override_return helper is not available: this kernel was built without CONFIG_FUNCTION_ERROR_INJECTION"},
		{FeatUprobe, "CONFIG_UPROBES", "uprobes are not available: this kernel was built without CONFIG_UPROBES"},
		{FeatBTF, "CONFIG_DEBUG_INFO_BTF", "kernel BTF is not available: this kernel was built without CONFIG_DEBUG_INFO_BTF"},
	}
	checked := 0
	for _, tt := range tests {
		if !cfg.Disabled(tt.option) {
			continue
		}
		checked++
		if got := Probe(tt.f); got != (Status{Feature: tt.f, Reason: tt.reason}) {
			t.Errorf("Probe(%v) = %+v, want reason %q", tt.f, got, tt.reason)
		}
	}
	t.Logf("%d of %d configuration reasons apply to this kernel", checked, len(tests))
}

func TestProbeProjectHost(t *testing.T) {
	testenv.Root(t)
	if !projectHost(t) {
		t.Skip("not the project's 6.18 host kernel (kernels.md); other kernels are judged against testenv")
	}
	for _, f := range []Feature{FeatBTF, FeatTracepoint, FeatRawTracepoint, FeatRawTracepointWritable, FeatPerfEvent, FeatPerfSoftware,
		FeatUprobe, FeatUretprobe, FeatUprobeMulti, FeatRingBuf, FeatPerCPUHash, FeatPerCPUArray, FeatStackTrace,
		FeatGetCurrentTaskBTF, FeatProbeReadKernel, FeatProbeReadUser, FeatProbeReadKernelStr, FeatProbeReadUserStr,
		FeatGetStackID, FeatRingbufOutput, FeatSendSignal, FeatLoop, FeatForEachMapElem, FeatMapLookupPercpuElem, FeatBoundedLoops, FeatIter} {
		if st := Probe(f); !st.Available {
			t.Errorf("%v: %s; the host allows it", f, st.Reason)
		}
	}
	refused := map[Feature]string{
		FeatFentry:         "fentry programs are refused by this kernel's policy (EPERM)",
		FeatFexit:          "fexit programs are refused by this kernel's policy (EPERM)",
		FeatFmodRet:        "fmod_ret programs are refused by this kernel's policy (EPERM)",
		FeatLSM:            "LSM programs are refused by this kernel's policy (EPERM)",
		FeatKprobe:         "kprobes are not available: this kernel was built without CONFIG_KPROBES",
		FeatKprobeMulti:    "kprobe.multi links are not available: this kernel was built without CONFIG_FPROBE",
		FeatKprobeSession:  "kprobe session links are not available: this kernel was built without CONFIG_FPROBE",
		FeatPerfHardware:   "hardware perf events are not available: this machine exposes no hardware performance counters (ENOENT)",
		FeatProbeWriteUser: "the bpf_probe_write_user helper is not available: kernel lockdown is set to integrity, which forbids BPF programs to write user memory",
	}
	for f, reason := range refused {
		if st := Probe(f); st != (Status{Feature: f, Reason: reason}) {
			t.Errorf("Probe(%v) = %+v, want reason %q", f, st, reason)
		}
	}
	if st := Probe(FeatBTF); st.Value != "/sys/kernel/btf/vmlinux" {
		t.Errorf("BTF value = %q", st.Value)
	}
}

func TestProbeInformational(t *testing.T) {
	testenv.Root(t)
	v, err := KernelVersion()
	if err != nil {
		t.Fatal(err)
	}
	if st := Probe(FeatKernelVersion); !st.Available || !strings.HasPrefix(st.Value, v.String()) {
		t.Errorf("kernel_version = %+v, want a value starting %s", st, v)
	}
	st := Probe(FeatLockdown)
	data, err := os.ReadFile("/sys/kernel/security/lockdown")
	if err != nil {
		t.Logf("lockdown file unreadable (%v); status %+v", err, st)
		return
	}
	// Read independently: the bracketed word is the mode.
	mode := ""
	for _, w := range strings.Fields(string(data)) {
		if strings.HasPrefix(w, "[") {
			mode = strings.Trim(w, "[]")
		}
	}
	if st.Value != mode || st.Available != (mode != "confidentiality") {
		t.Errorf("lockdown = %+v, file says %q", st, data)
	}
}

// TestProbeAgreesWithTestenv checks Probe against testenv, which decides by
// kernel version, configuration and a real attachment: wherever testenv
// finds a feature working, Probe must call it available.
func TestProbeAgreesWithTestenv(t *testing.T) {
	pairs := []struct {
		te testenv.Feature
		f  Feature
	}{
		{testenv.Kprobe, FeatKprobe},
		{testenv.Kretprobe, FeatKretprobe},
		{testenv.KprobeMulti, FeatKprobeMulti},
		{testenv.KprobeSession, FeatKprobeSession},
		{testenv.Fentry, FeatFentry},
		{testenv.Fexit, FeatFexit},
		{testenv.FmodRet, FeatFmodRet},
		{testenv.Uprobe, FeatUprobe},
		{testenv.UprobeMulti, FeatUprobeMulti},
		{testenv.Ringbuf, FeatRingBuf},
		{testenv.BTF, FeatBTF},
		{testenv.Tracepoint, FeatTracepoint},
		{testenv.RawTracepoint, FeatRawTracepoint},
		{testenv.PerfEvent, FeatPerfEvent},
	}
	for _, p := range pairs {
		t.Run(p.f.String(), func(t *testing.T) {
			testenv.Require(t, p.te)
			if st := Probe(p.f); !st.Available {
				t.Errorf("testenv attached %v, but Probe says: %s", p.te, st.Reason)
			}
		})
	}
}

func BenchmarkProbeCached(b *testing.B) {
	testenv.Root(b)
	Probe(FeatKprobe)
	for b.Loop() {
		Probe(FeatKprobe)
	}
}
