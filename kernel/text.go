package kernel

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// Text is the machine code of one kernel function as the running kernel
// holds it: after alternatives, static keys and ftrace have patched it.
type Text struct {
	Sym  KSym
	Code []byte // from Sym.Addr up to the next symbol
}

// ErrNoFunction marks a name that names no kernel function.
var ErrNoFunction = errors.New("no such kernel function")

// maxTextSize bounds the code FuncText reads: the largest kernel
// functions are a few tens of KiB, and a symbol followed by nothing
// nearby is no function whose end kallsyms can tell.
const maxTextSize = 1 << 20

// FuncText reads the code of the kernel function called name, which must
// name exactly one function.
func FuncText(name string) (*Text, error) {
	ks, err := LoadKallsyms()
	if err != nil {
		return nil, err
	}
	var funcs []KSym
	var other KSym
	for _, s := range ks.ByName(name) {
		if s.IsFunc() {
			funcs = append(funcs, s)
		} else {
			other = s
		}
	}
	switch {
	case len(funcs) == 0 && other.Name != "":
		return nil, fmt.Errorf("%s is a kernel symbol of type %c, not a function", name, other.Type)
	case len(funcs) == 0:
		return nil, fmt.Errorf("%w %s", ErrNoFunction, name)
	case len(funcs) > 1:
		return nil, fmt.Errorf("%d kernel functions are called %s (static functions of several files), and a kprobe cannot tell them apart", len(funcs), name)
	}
	return SymText(funcs[0])
}

// SymText reads the code of a function symbol, from its address up to the
// next symbol's.
func SymText(sym KSym) (*Text, error) {
	ks, err := LoadKallsyms()
	if err != nil {
		return nil, err
	}
	size, ok := ks.Size(sym.Addr)
	if !ok || size > maxTextSize {
		return nil, fmt.Errorf("cannot tell where %s ends: no symbol follows it within %d KiB", sym.Name, maxTextSize>>10)
	}
	code, err := ReadKernel(sym.Addr, int(size))
	if err != nil {
		return nil, fmt.Errorf("read the code of %s: %w", sym.Name, err)
	}
	return &Text{Sym: sym, Code: code}, nil
}

// Size returns the distance from addr, a symbol's address, to the next
// higher symbol's.
func (ks *Kallsyms) Size(addr uint64) (uint64, bool) {
	i := sort.Search(len(ks.syms), func(i int) bool { return ks.syms[i].Addr > addr })
	if i == len(ks.syms) || i == 0 || ks.syms[i-1].Addr != addr {
		return 0, false
	}
	return ks.syms[i].Addr - addr, true
}

// readChunk is how much kernel memory one run of the reader copies: most
// functions fit in one.
const readChunk = 16 << 10

// ReadKernel copies n bytes of kernel memory at addr. A small BPF
// program, run by kinst itself through BPF_PROG_TEST_RUN, copies them
// with bpf_probe_read_kernel into a map: this needs neither /proc/kcore
// (CONFIG_PROC_KCORE) nor kprobes, only what every kinst program needs.
func ReadKernel(addr uint64, n int) ([]byte, error) {
	if n < 0 || addr+uint64(n) < addr {
		return nil, fmt.Errorf("bad kernel range %#x+%d", addr, n)
	}
	buf, err := ebpf.NewMap(&ebpf.MapSpec{Name: "kinst_text", Type: ebpf.Array, KeySize: 4, ValueSize: readChunk, MaxEntries: 1})
	if err != nil {
		return nil, fmt.Errorf("create the buffer map: %w", err)
	}
	defer buf.Close()
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Name:         "kinst_text",
		Type:         ebpf.RawTracepoint,
		License:      "GPL",
		Instructions: readerInsns(buf.FD()),
	}, ebpf.ProgramOptions{LogDisabled: true})
	if err != nil {
		return nil, fmt.Errorf("load the reader program: %w", err)
	}
	defer prog.Close()

	out := make([]byte, 0, n)
	ctx := make([]byte, 16)
	chunk := make([]byte, readChunk)
	for len(out) < n {
		size := min(n-len(out), readChunk)
		binary.LittleEndian.PutUint64(ctx[0:], addr+uint64(len(out)))
		binary.LittleEndian.PutUint64(ctx[8:], uint64(size))
		ret, err := prog.Run(&ebpf.RunOptions{Context: ctx})
		if err != nil {
			return nil, fmt.Errorf("run the reader program: %w", err)
		}
		if errno := -int32(ret); errno > 0 {
			return nil, fmt.Errorf("bpf_probe_read_kernel at %#x: %w", addr+uint64(len(out)), unix.Errno(errno))
		}
		if err := buf.Lookup(uint32(0), chunk); err != nil {
			return nil, fmt.Errorf("read the buffer map: %w", err)
		}
		out = append(out, chunk[:size]...)
	}
	return out, nil
}

// readerInsns copies ctx[1] bytes (at most readChunk) from the kernel
// address ctx[0] into element 0 of the buffer map and returns what
// bpf_probe_read_kernel returned.
func readerInsns(mapFD int) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "fail"),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.LoadMem(asm.R2, asm.R6, 8, asm.DWord),
		asm.JGT.Imm(asm.R2, readChunk, "fail"),
		asm.LoadMem(asm.R3, asm.R6, 0, asm.DWord),
		asm.FnProbeReadKernel.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, -int32(unix.EINVAL)).WithSymbol("fail"),
		asm.Return(),
	}
}

// A KprobeRefusal is the kernel's refusal of a kprobe at an address.
type KprobeRefusal struct {
	Symbol string
	Offset uint64
	Errno  unix.Errno
	Why    string // the cause, as far as the errno and the kernel's lists tell
}

func (r *KprobeRefusal) Error() string {
	return fmt.Sprintf("the kernel refuses a kprobe at %s+%#x: %s", r.Symbol, r.Offset, r.Why)
}

// Unwrap lets errors.Is match the errno.
func (r *KprobeRefusal) Unwrap() error { return r.Errno }

// CheckKprobes asks the kernel whether it accepts a kprobe at each offset
// into the function symbol. It registers each through the kprobe PMU,
// which prepares a kprobe without arming it, and removes them all again:
// no code is patched. The result holds one error per offset, nil where
// the kernel accepts it. It fails as a whole when the kernel has no
// kprobe PMU to ask.
func CheckKprobes(symbol string, offsets []uint64) ([]error, error) {
	typ, err := kprobePMUType()
	if err != nil {
		return nil, err
	}
	name, err := unix.BytePtrFromString(symbol)
	if err != nil {
		return nil, err
	}
	errs := make([]error, len(offsets))
	var fds []int
	for i, off := range offsets {
		attr := unix.PerfEventAttr{
			Size: unix.PERF_ATTR_SIZE_VER1,
			Type: typ,
			Ext1: uint64(uintptr(unsafe.Pointer(name))),
			Ext2: off,
		}
		fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err == nil {
			fds = append(fds, fd)
			continue
		}
		var errno unix.Errno
		if !errors.As(err, &errno) {
			errs[i] = err
			continue
		}
		errs[i] = &KprobeRefusal{Symbol: symbol, Offset: off, Errno: errno, Why: refusalReason(symbol, errno)}
	}
	// Removing a kprobe waits for an RCU grace period; concurrent
	// removals share one.
	var wg sync.WaitGroup
	for _, fd := range fds {
		wg.Go(func() { unix.Close(fd) })
	}
	wg.Wait()
	return errs, nil
}

func kprobePMUType() (uint32, error) {
	data, err := os.ReadFile(filepath.Join(pmuDir, "kprobe", "type"))
	if err != nil {
		if why := configSays("CONFIG_KPROBES"); why != "" {
			return 0, errors.New(why)
		}
		return 0, fmt.Errorf("the kernel offers no kprobe PMU: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("kprobe PMU type %q: %w", data, err)
	}
	return uint32(v), nil
}

// refusalReason explains an errno from registering a kprobe.
func refusalReason(symbol string, errno unix.Errno) string {
	switch errno {
	case unix.EILSEQ:
		return "not an instruction boundary as the kernel decodes the function, or inside its ftrace call site (EILSEQ)"
	case unix.EINVAL:
		if onKprobeBlacklist(symbol) {
			return symbol + " is on the kernel's kprobe blacklist (EINVAL)"
		}
		if notrace(symbol) {
			return symbol + " is a function ftrace cannot trace, and this kernel allows kprobe events only in traceable functions (EINVAL)"
		}
		return "the kernel reserves this address: a jump label, static call or BUG/WARN site, or a function ftrace cannot trace (EINVAL)"
	case unix.EOPNOTSUPP, unix.Errno(524): // ENOTSUPP
		return "the kernel cannot single-step or emulate this instruction (" + unix.ErrnoName(errno) + ")"
	case unix.EADDRNOTAVAIL:
		return "several kernel symbols have this name (EADDRNOTAVAIL)"
	case unix.ENOENT:
		return "the kernel finds no such symbol (ENOENT)"
	case unix.EBUSY:
		return "the address is in use by another text patching mechanism (EBUSY)"
	case unix.EPERM, unix.EACCES:
		return "not permitted (" + unix.ErrnoName(errno) + "): kprobes need root (CAP_PERFMON)"
	}
	name := unix.ErrnoName(errno)
	if name == "" {
		name = fmt.Sprintf("errno %d", int(errno))
	}
	return errno.Error() + " (" + name + ")"
}

// notrace reports whether the kernel refuses kprobe events in symbol
// because ftrace cannot trace it. Like the kernel, it judges an outlined
// part (FUNC.cold) by its function.
func notrace(symbol string) bool {
	if cfg, err := LoadConfig(); err != nil || cfg.Enabled("CONFIG_KPROBE_EVENTS_ON_NOTRACE") {
		return false
	}
	funcs, err := TraceableFunctions()
	if err != nil || funcs.Source != SourceFilterFunctions {
		return false
	}
	fn, _, _ := strings.Cut(symbol, ".")
	return !funcs.Contains(symbol) && !funcs.Contains(fn)
}

// onKprobeBlacklist reports whether debugfs's kprobes/blacklist, where
// it can be read, lists the function.
func onKprobeBlacklist(symbol string) bool {
	f, err := os.Open("/sys/kernel/debug/kprobes/blacklist")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "0xffffffff81001000-0xffffffff81001050\tfunction"
		if _, name, ok := strings.Cut(sc.Text(), "\t"); ok && strings.TrimSpace(name) == symbol {
			return true
		}
	}
	return false
}
