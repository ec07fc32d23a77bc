package kernel

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/hwbp"
	"kinst.dev/kinst/internal/inject"
)

// Feature is one thing the kernel may or may not allow. The constants are
// in the order `kinst features` lists them.
type Feature int

const (
	FeatBTF                   Feature = iota // kernel BTF type information
	FeatKernelVersion                        // the kernel version (informational)
	FeatLockdown                             // the lockdown mode; unavailable only under confidentiality
	FeatTracepoint                           // tracepoint programs and tracefs
	FeatRawTracepoint                        // raw_tracepoint programs
	FeatRawTracepointWritable                // raw_tracepoint_writable programs
	FeatPerfEvent                            // perf_event programs (profile:, interval:, software:)
	FeatPerfHardware                         // hardware perf counters (hardware:)
	FeatPerfSoftware                         // software perf events (software:) on all CPUs
	FeatWatchpoint                           // hardware breakpoints (watchpoint:) that fire
	FeatKprobe
	FeatKretprobe
	FeatKprobeMulti
	FeatKprobeSession // kprobe.multi links that run one program at entry and return
	FeatUprobe
	FeatUretprobe
	FeatUprobeMulti
	FeatUprobeRefCtr // the uprobe reference counter, which raises USDT semaphores
	FeatFentry
	FeatFexit
	FeatFmodRet
	FeatLSM
	FeatIter        // BPF iterators (iter:)
	FeatRingBuf     // ring buffer maps
	FeatPerCPUHash  // per-CPU hash maps
	FeatPerCPUArray // per-CPU array maps
	FeatStackTrace  // stack trace maps
	FeatGetCurrentTaskBTF
	FeatProbeReadKernel
	FeatProbeReadUser
	FeatProbeReadKernelStr
	FeatProbeReadUserStr
	FeatGetStackID
	FeatRingbufOutput
	FeatOverrideReturn
	FeatSendSignal
	FeatProbeWriteUser // bpf_probe_write_user, refused under lockdown
	FeatLoop           // the bpf_loop helper
	FeatForEachMapElem
	FeatMapLookupPercpuElem
	FeatBoundedLoops // verifier support for bounded loops
	numFeatures
)

// featureInfo names a feature and says how a sentence about it reads.
type featureInfo struct {
	name   string // stable identifier for tables and JSON
	what   string // subject of a sentence: "kprobes", "the bpf_loop helper"
	plural bool
}

var featureInfos = [numFeatures]featureInfo{
	FeatBTF:                   {"btf", "kernel BTF", false},
	FeatKernelVersion:         {"kernel_version", "the kernel version", false},
	FeatLockdown:              {"lockdown", "tracing under kernel lockdown", false},
	FeatTracepoint:            {"tracepoint", "tracepoints", true},
	FeatRawTracepoint:         {"raw_tracepoint", "raw tracepoints", true},
	FeatRawTracepointWritable: {"raw_tracepoint_writable", "writable raw tracepoints", true},
	FeatPerfEvent:             {"perf_event", "perf event programs", true},
	FeatPerfHardware:          {"perf_hardware", "hardware perf events", true},
	FeatPerfSoftware:          {"perf_software", "software perf events", true},
	FeatWatchpoint:            {"watchpoint", "hardware watchpoints", true},
	FeatKprobe:                {"kprobe", "kprobes", true},
	FeatKretprobe:             {"kretprobe", "kretprobes", true},
	FeatKprobeMulti:           {"kprobe_multi", "kprobe.multi links", true},
	FeatKprobeSession:         {"kprobe_session", "kprobe session links", true},
	FeatUprobe:                {"uprobe", "uprobes", true},
	FeatUretprobe:             {"uretprobe", "uretprobes", true},
	FeatUprobeMulti:           {"uprobe_multi", "uprobe.multi links", true},
	FeatUprobeRefCtr:          {"uprobe_ref_ctr", "the uprobe reference counter", false},
	FeatFentry:                {"fentry", "fentry programs", true},
	FeatFexit:                 {"fexit", "fexit programs", true},
	FeatFmodRet:               {"fmod_ret", "fmod_ret programs", true},
	FeatLSM:                   {"lsm", "LSM programs", true},
	FeatIter:                  {"iter", "iterator programs", true},
	FeatRingBuf:               {"ringbuf", "ring buffer maps", true},
	FeatPerCPUHash:            {"percpu_hash", "per-CPU hash maps", true},
	FeatPerCPUArray:           {"percpu_array", "per-CPU array maps", true},
	FeatStackTrace:            {"stack_trace", "stack trace maps", true},
	FeatGetCurrentTaskBTF:     {"get_current_task_btf", "the bpf_get_current_task_btf helper", false},
	FeatProbeReadKernel:       {"probe_read_kernel", "the bpf_probe_read_kernel helper", false},
	FeatProbeReadUser:         {"probe_read_user", "the bpf_probe_read_user helper", false},
	FeatProbeReadKernelStr:    {"probe_read_kernel_str", "the bpf_probe_read_kernel_str helper", false},
	FeatProbeReadUserStr:      {"probe_read_user_str", "the bpf_probe_read_user_str helper", false},
	FeatGetStackID:            {"get_stackid", "the bpf_get_stackid helper", false},
	FeatRingbufOutput:         {"ringbuf_output", "the bpf_ringbuf_output helper", false},
	FeatOverrideReturn:        {"override_return", "the bpf_override_return helper", false},
	FeatSendSignal:            {"send_signal", "the bpf_send_signal helper", false},
	FeatProbeWriteUser:        {"probe_write_user", "the bpf_probe_write_user helper", false},
	FeatLoop:                  {"loop", "the bpf_loop helper", false},
	FeatForEachMapElem:        {"for_each_map_elem", "the bpf_for_each_map_elem helper", false},
	FeatMapLookupPercpuElem:   {"map_lookup_percpu_elem", "the bpf_map_lookup_percpu_elem helper", false},
	FeatBoundedLoops:          {"bounded_loops", "bounded loops", true},
}

// String returns the feature's stable identifier, e.g. "kprobe_multi".
func (f Feature) String() string {
	if f < 0 || f >= numFeatures {
		return "Feature(" + strconv.Itoa(int(f)) + ")"
	}
	return featureInfos[f].name
}

// MarshalText encodes the feature as its identifier.
func (f Feature) MarshalText() ([]byte, error) {
	if f < 0 || f >= numFeatures {
		return nil, fmt.Errorf("unknown feature %d", int(f))
	}
	return []byte(f.String()), nil
}

// UnmarshalText decodes a feature identifier.
func (f *Feature) UnmarshalText(text []byte) error {
	g, err := ParseFeature(string(text))
	if err != nil {
		return err
	}
	*f = g
	return nil
}

// ParseFeature returns the feature with the given identifier.
func ParseFeature(name string) (Feature, error) {
	for f := range numFeatures {
		if featureInfos[f].name == name {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unknown kernel feature %q", name)
}

// Features returns every feature in listing order.
func Features() []Feature {
	out := make([]Feature, numFeatures)
	for f := range numFeatures {
		out[f] = f
	}
	return out
}

// Status is the answer for one feature.
type Status struct {
	Feature   Feature `json:"name"`
	Available bool    `json:"available"`
	// Value carries what informational items found: the kernel version,
	// the lockdown mode, where BTF came from.
	Value string `json:"value,omitempty"`
	// Reason is one sentence saying why the feature is unavailable.
	Reason string `json:"reason,omitempty"`
}

var probeResults [numFeatures]struct {
	once sync.Once
	st   Status
}

// Probe finds out whether the running kernel allows f. Each feature is
// probed once per process, on first request, and only what it needs is
// touched: asking about kprobes loads no BTF and asking about fentry reads
// no kallsyms. BPF probes need root; on kernels older than 5.11 the caller
// must also have raised RLIMIT_MEMLOCK (cilium/ebpf's rlimit package).
func Probe(f Feature) Status {
	if f < 0 || f >= numFeatures {
		return Status{Feature: f, Reason: fmt.Sprintf("unknown feature %d", int(f))}
	}
	r := &probeResults[f]
	r.once.Do(func() { r.st = probe(f) })
	return r.st
}

// Available is shorthand for Probe(f).Available.
func Available(f Feature) bool { return Probe(f).Available }

// ProbeAll probes every feature and returns the answers in listing order.
func ProbeAll() []Status {
	out := make([]Status, numFeatures)
	var wg sync.WaitGroup
	for f := range numFeatures {
		wg.Go(func() { out[f] = Probe(f) })
	}
	wg.Wait()
	return out
}

func (f Feature) yes(value string) Status {
	return Status{Feature: f, Available: true, Value: value}
}

// no builds an unavailable status whose reason reads
// "<what> is/are not available: <why>".
func (f Feature) no(why string) Status {
	return Status{Feature: f, Reason: f.subject() + " not available: " + why}
}

func (f Feature) subject() string {
	info := featureInfos[f]
	if info.plural {
		return info.what + " are"
	}
	return info.what + " is"
}

// fromErr turns the result of a cilium/ebpf feature test or a probe load
// into a status.
func (f Feature) fromErr(err error) Status {
	switch {
	case err == nil:
		return f.yes("")
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		if !privileged() {
			return Status{Feature: f, Reason: f.subject() + " not available: probing needs root (CAP_BPF and CAP_PERFMON)"}
		}
		return Status{Feature: f, Reason: f.subject() + " refused by this kernel's policy (EPERM)"}
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, unix.EINVAL),
		errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.Errno(524)), errors.Is(err, unix.E2BIG):
		return Status{Feature: f, Reason: f.subject() + " not supported by this kernel"}
	}
	return Status{Feature: f, Reason: f.subject() + " not available: probing failed: " + err.Error()}
}

// privileged reports whether the process holds CAP_SYS_ADMIN or CAP_BPF,
// without which every BPF probe fails with EPERM for that reason alone.
func privileged() bool {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return os.Geteuid() == 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return os.Geteuid() == 0
			}
			return caps&(1<<unix.CAP_SYS_ADMIN) != 0 || caps&(1<<unix.CAP_BPF) != 0
		}
	}
	return os.Geteuid() == 0
}

// configSays returns "this kernel was built without OPTION" for the first
// option the build configuration records as off, or "" when none is or the
// configuration is unknown.
func configSays(options ...string) string {
	cfg, err := LoadConfig()
	if err != nil {
		return ""
	}
	for _, opt := range options {
		if cfg.Disabled(opt) {
			return "this kernel was built without " + opt
		}
	}
	return ""
}

// tracefsHas reports whether tracefs is reachable and has the named file.
func tracefsHas(name string) bool {
	dir, err := TracefsDir()
	return err == nil && exists(filepath.Join(dir, name))
}

var helperFuncs = map[Feature]asm.BuiltinFunc{
	FeatGetCurrentTaskBTF:  asm.FnGetCurrentTaskBtf,
	FeatProbeReadKernel:    asm.FnProbeReadKernel,
	FeatProbeReadUser:      asm.FnProbeReadUser,
	FeatProbeReadKernelStr: asm.FnProbeReadKernelStr,
	FeatProbeReadUserStr:   asm.FnProbeReadUserStr,
	FeatGetStackID:         asm.FnGetStackid,
	FeatRingbufOutput:      asm.FnRingbufOutput,
	FeatOverrideReturn:     asm.FnOverrideReturn,
	FeatSendSignal:         asm.FnSendSignal,
	FeatProbeWriteUser:     asm.FnProbeWriteUser,
	FeatLoop:               asm.FnLoop,
	// for ($kv : @map) and, over an aggregation, its totals.
	FeatForEachMapElem:      asm.FnForEachMapElem,
	FeatMapLookupPercpuElem: asm.FnMapLookupPercpuElem,
}

var mapTypes = map[Feature]ebpf.MapType{
	FeatRingBuf:     ebpf.RingBuf,
	FeatPerCPUHash:  ebpf.PerCPUHash,
	FeatPerCPUArray: ebpf.PerCPUArray,
	FeatStackTrace:  ebpf.StackTrace,
}

func probe(f Feature) Status {
	if fn, ok := helperFuncs[f]; ok {
		return probeHelper(f, fn)
	}
	if mt, ok := mapTypes[f]; ok {
		return f.fromErr(features.HaveMapType(mt))
	}
	switch f {
	case FeatBTF:
		return probeBTF()
	case FeatKernelVersion:
		return probeVersion()
	case FeatLockdown:
		return probeLockdown()
	case FeatTracepoint:
		if _, err := TracefsDir(); err != nil {
			return f.no("tracefs is not mounted and could not be mounted")
		}
		return f.fromErr(features.HaveProgramType(ebpf.TracePoint))
	case FeatRawTracepoint:
		return f.fromErr(features.HaveProgramType(ebpf.RawTracepoint))
	case FeatRawTracepointWritable:
		return f.fromErr(features.HaveProgramType(ebpf.RawTracepointWritable))
	case FeatPerfEvent:
		return f.fromErr(features.HaveProgramType(ebpf.PerfEvent))
	case FeatPerfHardware:
		return probeHardware()
	case FeatPerfSoftware:
		return probeSoftware()
	case FeatWatchpoint:
		err := hwbp.Probe()
		if errors.Is(err, hwbp.ErrNeverFires) {
			return f.no(err.Error())
		}
		return f.fromErr(err)
	case FeatKprobe, FeatKretprobe:
		return probeKprobe(f)
	case FeatKprobeMulti:
		err := features.HaveBPFLinkKprobeMulti()
		if errors.Is(err, ebpf.ErrNotSupported) {
			if why := configSays("CONFIG_FPROBE"); why != "" {
				return f.no(why)
			}
			return f.no("this kernel does not support bpf_link_kprobe_multi")
		}
		return f.fromErr(err)
	case FeatKprobeSession:
		// BPF_TRACE_KPROBE_SESSION came in 6.10, on top of kprobe.multi.
		err := features.HaveBPFLinkKprobeSession()
		if errors.Is(err, ebpf.ErrNotSupported) {
			if why := configSays("CONFIG_FPROBE"); why != "" {
				return f.no(why)
			}
			return f.no("this kernel does not support bpf_link_kprobe_session")
		}
		return f.fromErr(err)
	case FeatUprobe, FeatUretprobe:
		return probeUprobe(f)
	case FeatUprobeMulti:
		if st := Probe(FeatUprobe); !st.Available {
			return f.no(why(st))
		}
		return f.fromErr(features.HaveBPFLinkUprobeMulti())
	case FeatUprobeRefCtr:
		return probeRefCtr()
	case FeatFentry:
		return probeTracing(f, ebpf.AttachTraceFEntry, "vfs_read", "do_nanosleep")
	case FeatFexit:
		return probeTracing(f, ebpf.AttachTraceFExit, "vfs_read", "do_nanosleep")
	case FeatFmodRet:
		// The kernel allows fmod_ret only on security_* hooks and on
		// functions marked for error injection.
		return probeTracing(f, ebpf.AttachModifyReturn, "security_file_open", "security_task_alloc")
	case FeatLSM:
		return probeLSM()
	case FeatIter:
		return probeTracing(f, ebpf.AttachTraceIter, "bpf_iter_task")
	case FeatBoundedLoops:
		return f.fromErr(features.HaveBoundedLoops())
	}
	return f.no("kinst has no probe for it")
}

// why returns the part of another feature's reason after its subject, so
// that a dependent feature can give the same cause in its own words.
func why(st Status) string {
	if _, after, ok := strings.Cut(st.Reason, " not available: "); ok {
		return after
	}
	if strings.Contains(st.Reason, "refused by this kernel's policy") {
		return "this kernel's policy refuses them (EPERM)"
	}
	return strings.TrimSuffix(st.Reason, ".")
}

// refCtrFormat is the uprobe PMU's field for a reference counter's
// offset, which Linux 4.20 added with the counter.
const refCtrFormat = pmuDir + "/uprobe/format/ref_ctr_offset"

// probeRefCtr answers for the uprobe reference counter: with it, the
// kernel raises a USDT probe's semaphore in every process mapping the
// file while the uprobe is attached. Tests take it away through
// KINST_INJECT (uprobe_ref_ctr.fail=1), to run kinst's own fallback.
func probeRefCtr() Status {
	f := FeatUprobeRefCtr
	if st := Probe(FeatUprobe); !st.Available {
		return f.no(why(st))
	}
	if inject.Fail(inject.RefCtr) != nil {
		return f.no("taken away for a test (" + inject.Var + ")")
	}
	if !exists(refCtrFormat) {
		return f.no("this kernel predates it (Linux 4.20): kinst raises USDT semaphores itself, in the processes of -p, -c or --usdt-file-activation")
	}
	return f.yes("")
}

func probeBTF() Status {
	if _, err := KernelBTF(); err != nil {
		if why := configSays("CONFIG_DEBUG_INFO_BTF"); why != "" {
			return FeatBTF.no(why)
		}
		return FeatBTF.no("neither /sys/kernel/btf/vmlinux nor a vmlinux file with BTF was found")
	}
	if exists("/sys/kernel/btf/vmlinux") {
		return FeatBTF.yes("/sys/kernel/btf/vmlinux")
	}
	return FeatBTF.yes("vmlinux file")
}

func probeVersion() Status {
	v, err := KernelVersion()
	if err != nil {
		return FeatKernelVersion.no(err.Error())
	}
	rel, err := Release()
	if err != nil || rel == v.String() {
		return FeatKernelVersion.yes(v.String())
	}
	return FeatKernelVersion.yes(v.String() + " (" + rel + ")")
}

const securityfs = "/sys/kernel/security"

// securityFile reads a file from securityfs, mounting securityfs first
// when it is absent and the process is root.
func securityFile(name string) ([]byte, error) {
	if err := mountIfAbsent("securityfs", securityfs, unix.SECURITYFS_MAGIC); err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(securityfs, name))
}

func probeLockdown() Status {
	data, err := securityFile("lockdown")
	if errors.Is(err, os.ErrNotExist) && isMounted(securityfs, unix.SECURITYFS_MAGIC) {
		// securityfs is there but the lockdown LSM is not built in.
		return FeatLockdown.yes("none")
	}
	if err != nil {
		return FeatLockdown.yes("unknown")
	}
	mode := lockdownMode(string(data))
	if mode == "confidentiality" {
		return Status{Feature: FeatLockdown, Value: mode,
			Reason: "kernel lockdown is set to confidentiality, which forbids BPF programs to read kernel memory"}
	}
	return FeatLockdown.yes(mode)
}

// lockdownMode picks the bracketed mode out of "none [integrity] confidentiality".
func lockdownMode(s string) string {
	for _, w := range strings.Fields(s) {
		if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") {
			return strings.Trim(w, "[]")
		}
	}
	return strings.TrimSpace(s)
}

func probeHardware() Status {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_HARDWARE,
		Config: unix.PERF_COUNT_HW_CPU_CYCLES,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(fd)
		return FeatPerfHardware.yes("")
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
		return FeatPerfHardware.no("this machine exposes no hardware performance counters (" + errnoName(err) + ")")
	}
	return FeatPerfHardware.fromErr(err)
}

// probeSoftware opens a software counter on every task of one CPU, as
// software: probes do, which perf_event_paranoid above 0 refuses to a
// process without CAP_PERFMON.
func probeSoftware() Status {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_PAGE_FAULTS,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(fd)
		return FeatPerfSoftware.yes("")
	}
	return FeatPerfSoftware.fromErr(err)
}

func errnoName(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return err.Error()
}

const pmuDir = "/sys/bus/event_source/devices"

// probeKprobe answers for kprobes and kretprobes. The program type loads
// even without CONFIG_KPROBES (uprobes use it too), so the mechanism is
// judged by the build configuration and by the kprobe PMU or tracefs's
// kprobe_events, either of which attaching needs.
func probeKprobe(f Feature) Status {
	if why := configSays("CONFIG_KPROBES"); why != "" {
		return f.no(why)
	}
	pmu := exists(filepath.Join(pmuDir, "kprobe", "type"))
	legacy := tracefsHas("kprobe_events")
	if !pmu && !legacy {
		return f.no("the kernel offers neither the kprobe PMU nor tracefs kprobe_events")
	}
	if f == FeatKretprobe {
		if why := configSays("CONFIG_KRETPROBES"); why != "" {
			return f.no(why)
		}
		if !legacy && !exists(filepath.Join(pmuDir, "kprobe", "format", "retprobe")) {
			return f.no("the kprobe PMU has no retprobe format")
		}
	}
	return f.fromErr(features.HaveProgramType(ebpf.Kprobe))
}

func probeUprobe(f Feature) Status {
	if why := configSays("CONFIG_UPROBES"); why != "" {
		return f.no(why)
	}
	pmu := exists(filepath.Join(pmuDir, "uprobe", "type"))
	legacy := tracefsHas("uprobe_events")
	if !pmu && !legacy {
		return f.no("the kernel offers neither the uprobe PMU nor tracefs uprobe_events")
	}
	if f == FeatUretprobe && !legacy && !exists(filepath.Join(pmuDir, "uprobe", "format", "retprobe")) {
		return f.no("the uprobe PMU has no retprobe format")
	}
	return f.fromErr(features.HaveProgramType(ebpf.Kprobe))
}

// probeTracing loads an empty BPF_PROG_TYPE_TRACING program of the given
// attach type against the first candidate function kernel BTF describes.
func probeTracing(f Feature, at ebpf.AttachType, candidates ...string) Status {
	spec, err := KernelBTF()
	if err != nil {
		return f.no("they need kernel BTF, which this kernel does not offer")
	}
	target := ""
	for _, c := range candidates {
		if _, err := findFunc(spec, c); err == nil {
			target = c
			break
		}
	}
	if target == "" {
		return f.no("kernel BTF describes none of " + strings.Join(candidates, ", "))
	}
	if at == ebpf.AttachTraceIter {
		// cilium/ebpf names an iterator without its BTF prefix.
		target = strings.TrimPrefix(target, "bpf_iter_")
	}
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Type:       ebpf.Tracing,
		AttachType: at,
		AttachTo:   target,
		License:    "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		},
	}, ebpf.ProgramOptions{LogDisabled: true, KernelTypes: spec})
	if err == nil {
		prog.Close()
	}
	return f.fromErr(err)
}

func probeLSM() Status {
	if why := configSays("CONFIG_BPF_LSM"); why != "" {
		return FeatLSM.no(why)
	}
	if st := FeatLSM.fromErr(features.HaveProgramType(ebpf.LSM)); !st.Available {
		return st
	}
	if data, err := securityFile("lsm"); err == nil && !slices.Contains(strings.Split(strings.TrimSpace(string(data)), ","), "bpf") {
		return FeatLSM.no("the bpf LSM is not active (add bpf to the lsm= boot parameter)")
	}
	return FeatLSM.yes("")
}

func probeHelper(f Feature, fn asm.BuiltinFunc) Status {
	err := features.HaveProgramHelper(ebpf.Kprobe, fn)
	if f == FeatProbeWriteUser && errors.Is(err, ebpf.ErrNotSupported) {
		// The kernel offers the helper only outside lockdown.
		if mode := Probe(FeatLockdown).Value; mode == "integrity" || mode == "confidentiality" {
			return f.no("kernel lockdown is set to " + mode + ", which forbids BPF programs to write user memory")
		}
	}
	if f == FeatOverrideReturn && errors.Is(err, ebpf.ErrNotSupported) {
		if why := configSays("CONFIG_FUNCTION_ERROR_INJECTION", "CONFIG_BPF_KPROBE_OVERRIDE"); why != "" {
			return f.no(why)
		}
	}
	return f.fromErr(err)
}
