package testenv

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/hwbp"
)

// A Feature is a kernel facility that a test may need.
type Feature int

// The features Require knows.
const (
	Kprobe              Feature = iota // kprobe attached through perf_event or tracefs
	Kretprobe                          // kretprobe
	KprobeMulti                        // kprobe.multi link (fprobe)
	KprobeSession                      // kprobe.multi link with session semantics
	Fentry                             // fentry tracing program
	Fexit                              // fexit tracing program
	FmodRet                            // fmod_ret on a security_* function
	Uprobe                             // uprobe
	UprobeMulti                        // uprobe.multi link
	Ringbuf                            // BPF ring buffer map
	BTF                                // kernel BTF in /sys/kernel/btf/vmlinux
	Tracepoint                         // tracepoint program on a syscall tracepoint
	RawTracepoint                      // raw tracepoint program
	PerfEvent                          // perf_event program on a software event
	Iter                               // task iterator program
	ForEachMapElem                     // bpf_for_each_map_elem helper
	MapLookupPercpuElem                // bpf_map_lookup_percpu_elem helper
	Loop                               // bpf_loop helper
	Watchpoint                         // hardware breakpoints that fire
	numFeatures
)

// A featureInfo is the evidence a feature needs: the first kernel version
// that has it, the configuration options it depends on, and a probe that
// really uses it.
type featureInfo struct {
	name    string
	since   version
	configs []string
	probe   func() error
}

var features = [numFeatures]featureInfo{
	Kprobe:              {"kprobe", version{4, 1}, []string{"CONFIG_BPF_EVENTS", "CONFIG_KPROBES", "CONFIG_KPROBE_EVENTS"}, probeKprobe},
	Kretprobe:           {"kretprobe", version{4, 1}, []string{"CONFIG_BPF_EVENTS", "CONFIG_KRETPROBES", "CONFIG_KPROBE_EVENTS"}, probeKretprobe},
	KprobeMulti:         {"kprobe.multi", version{5, 18}, []string{"CONFIG_BPF_EVENTS", "CONFIG_FPROBE"}, probeKprobeMulti},
	KprobeSession:       {"kprobe session", version{6, 10}, []string{"CONFIG_BPF_EVENTS", "CONFIG_FPROBE"}, probeKprobeSession},
	Fentry:              {"fentry", version{5, 5}, tracingConfigs, probeFentry},
	Fexit:               {"fexit", version{5, 5}, tracingConfigs, probeFexit},
	FmodRet:             {"fmod_ret", version{5, 7}, tracingConfigs, probeFmodRet},
	Uprobe:              {"uprobe", version{4, 3}, []string{"CONFIG_BPF_EVENTS", "CONFIG_UPROBES", "CONFIG_UPROBE_EVENTS"}, probeUprobe},
	UprobeMulti:         {"uprobe.multi", version{6, 6}, []string{"CONFIG_BPF_EVENTS", "CONFIG_UPROBES"}, probeUprobeMulti},
	Ringbuf:             {"ringbuf", version{5, 8}, []string{"CONFIG_BPF_SYSCALL"}, probeRingbuf},
	BTF:                 {"BTF", version{5, 4}, []string{"CONFIG_DEBUG_INFO_BTF"}, probeBTF},
	Tracepoint:          {"tracepoint", version{4, 7}, []string{"CONFIG_BPF_EVENTS", "CONFIG_FTRACE_SYSCALLS"}, probeTracepoint},
	RawTracepoint:       {"raw tracepoint", version{4, 17}, []string{"CONFIG_BPF_EVENTS"}, probeRawTracepoint},
	PerfEvent:           {"perf_event", version{4, 9}, []string{"CONFIG_BPF_EVENTS", "CONFIG_PERF_EVENTS"}, probePerfEvent},
	Iter:                {"iter", version{5, 8}, []string{"CONFIG_BPF_SYSCALL", "CONFIG_DEBUG_INFO_BTF"}, probeIter},
	ForEachMapElem:      {"bpf_for_each_map_elem", version{5, 13}, []string{"CONFIG_BPF_SYSCALL"}, probeForEachMapElem},
	MapLookupPercpuElem: {"bpf_map_lookup_percpu_elem", version{5, 19}, []string{"CONFIG_BPF_SYSCALL"}, probeMapLookupPercpuElem},
	Loop:                {"bpf_loop", version{5, 17}, []string{"CONFIG_BPF_SYSCALL"}, probeLoop},
	Watchpoint:          {"watchpoint", version{2, 6}, []string{"CONFIG_HAVE_HW_BREAKPOINT"}, probeWatchpoint},
}

// errMachine marks a probe's failure as the machine's, not the kernel's:
// a kernel built for breakpoints on a machine whose debug registers do
// not trap. Tests skip there.
var errMachine = errors.New("this machine lacks it")

func probeWatchpoint() error {
	err := hwbp.Probe()
	if errors.Is(err, hwbp.ErrNeverFires) {
		return fmt.Errorf("%w: %w", errMachine, err)
	}
	return err
}

// tracingConfigs are what fentry, fexit and fmod_ret programs need: BTF to
// name the function, and ftrace direct calls to attach a trampoline.
var tracingConfigs = []string{"CONFIG_BPF_JIT", "CONFIG_DEBUG_INFO_BTF", "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS"}

func (f Feature) String() string {
	if f < 0 || f >= numFeatures {
		return fmt.Sprintf("Feature(%d)", int(f))
	}
	return features[f].name
}

// probes remembers each probe's result for the life of the test binary.
var probes [numFeatures]struct {
	once sync.Once
	err  error
}

// Require skips or fails t unless the running kernel offers every feature.
//
// It skips, with the reason, where the kernel really lacks a feature: not
// root, a kernel older than the feature, a configuration option that is not
// set, or a refusal by policy (EPERM, as the host refuses fentry). It fails
// where the version and configuration say the feature must be there and a
// real attempt to use it fails.
func Require(t testing.TB, fs ...Feature) {
	t.Helper()
	Root(t)
	k := kernel()
	if k.err != nil {
		t.Fatalf("testenv: %v", k.err)
	}
	for _, f := range fs {
		if f < 0 || f >= numFeatures {
			t.Fatalf("testenv: unknown feature %v", f)
		}
		p := &probes[f]
		probe := func() error {
			p.once.Do(func() { p.err = features[f].probe() })
			return p.err
		}
		skip, fail := decide(k, features[f], probe)
		if fail != "" {
			t.Fatal(fail)
		}
		if skip != "" {
			t.Skip(skip)
		}
	}
}

// decide returns why a test needing a feature must skip or fail on kernel k;
// both are empty when the feature works. It runs probe only when the version
// and configuration allow the feature.
func decide(k kernelInfo, info featureInfo, probe func() error) (skip, fail string) {
	if !k.atLeast(info.since) {
		return fmt.Sprintf("%s needs Linux %v or later; this is %s", info.name, info.since, k.release), ""
	}
	var unset []string
	for _, opt := range info.configs {
		if v, ok := k.config[opt]; k.config != nil && (!ok || v == "n") {
			unset = append(unset, opt)
		}
	}
	if len(unset) > 0 {
		return fmt.Sprintf("%s unavailable on Linux %s: %s not set in %s", info.name, k.release, strings.Join(unset, ", "), k.configFrom), ""
	}
	err := probe()
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, errMachine):
		return fmt.Sprintf("%s unavailable on this machine: %v", info.name, err), ""
	case errors.Is(err, unix.EPERM):
		return fmt.Sprintf("%s refused by policy (EPERM) on Linux %s: %v", info.name, k.release, err), ""
	case k.config == nil && errors.Is(err, ebpf.ErrNotSupported):
		return fmt.Sprintf("%s not supported on Linux %s, which has no readable configuration to say it should be: %v", info.name, k.release, err), ""
	}
	evidence := "its configuration has " + strings.Join(info.configs, ", ")
	if k.config == nil {
		evidence = "its configuration is unknown"
	}
	return "", fmt.Sprintf("%s must work on Linux %s (since %v; %s) but failed: %v", info.name, k.release, info.since, evidence, err)
}
