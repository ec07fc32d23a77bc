package session

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/output"
)

var le = binary.LittleEndian

// decoder turns bytes BPF wrote into values package output prints.
type decoder struct {
	out     *codegen.Output
	kstacks *ebpf.Map
	ustacks *ebpf.Map
	buildID *ebpf.Map // the stacks of ustack(build_id)

	ksymsOnce sync.Once
	ksyms     *kernel.Kallsyms
	usyms     *elfsym.Symbolizer

	// trailer ends strings that fill their size without a NUL: cut
	// short, as bpftrace 0.26.1 marks them; "" in the 0.17 mode.
	trailer string

	noUserSymbols bool // BPFTRACE_NO_USER_SYMBOLS: user addresses print in hex
	noSymbolCache bool // BPFTRACE_CACHE_USER_SYMBOLS=0: no symbols kept between lookups
	// debugInfo prints user frames with their source lines and inlined
	// functions, bpftrace 0.26.1's show_debug_info.
	debugInfo bool
	// program is the one program the uprobes name, whose symbols
	// resolve the frames of processes gone (PER_PROGRAM); "" for none.
	program string

	bootOnce sync.Once
	boot     time.Time // the wall time the kernel booted at
}

// role says where a value is printed; pointers print as addresses in
// keys and as plain integers in values, as bpftrace does.
type role int

const (
	asValue role = iota
	asKey
	asArg // an argument of printf, system or cat: pointers as in keys
)

func (d *decoder) kallsyms() *kernel.Kallsyms {
	d.ksymsOnce.Do(func() {
		d.ksyms, _ = kernel.LoadKallsyms()
	})
	return d.ksyms
}

func (d *decoder) ksym(addr uint64) string {
	if k := d.kallsyms(); k != nil {
		return k.Sym(addr)
	}
	return ""
}

func word(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(le.Uint16(b))
	case 4:
		return uint64(le.Uint32(b))
	}
	return le.Uint64(b)
}

// bitfield extracts a bitfield's value from the bytes at its offset.
func bitfield(b []byte, f *check.Field) uint64 {
	var raw uint64
	for i := 0; i < 8 && i < len(b) && i*8 < f.BitOffset+f.Bits; i++ {
		raw |= uint64(b[i]) << (8 * i)
	}
	raw >>= f.BitOffset
	if f.Bits < 64 {
		raw &= 1<<f.Bits - 1
	}
	return raw
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// value decodes a value of type t from b.
func (d *decoder) value(t *check.Type, b []byte, r role) output.Value {
	switch t.Kind {
	case check.Int:
		if t.IsBool() {
			return output.Bool(b[0] != 0)
		}
		if t.Enum != nil && d.out.Compat != compat.V017 {
			v := output.IntN(word(b, t.Size), t.Size, t.Signed)
			return output.Enum(v.Uint(), t.Size, t.Signed, t.Enum.Names[v.Int()])
		}
		return output.IntN(word(b, t.Size), t.Size, t.Signed)
	case check.Float:
		return output.None()
	case check.Ptr:
		if r != asValue || d.out.Compat != compat.V017 {
			return output.Pointer(le.Uint64(b))
		}
		// 0.17 prints pointer values signed: kernel addresses are
		// negative; 0.26.1 prints them in hex.
		return output.Int(int64(le.Uint64(b)))
	case check.Str:
		if bytes.IndexByte(b[:t.Size], 0) < 0 {
			if t.Size != d.out.StrLen {
				return output.String(string(b[:t.Size]))
			}
			return output.String(string(b[:t.Size]) + d.trailer)
		}
		return output.String(cstring(b[:t.Size]))
	case check.Tuple:
		elems := make([]output.Value, len(t.Elems))
		for i, e := range t.Elems {
			elems[i] = d.value(e, b[t.Offsets[i]:], r)
		}
		if t.Names != nil {
			// A record prints as a struct does.
			return output.Record(t.Names, elems)
		}
		return output.Tuple(elems...)
	case check.Array:
		elems := make([]output.Value, t.Len)
		for i := range elems {
			off := i * t.Elem.Size
			elems[i] = d.member(t.Elem, b[off:off+t.Elem.Size], r)
		}
		return output.Array(elems...)
	case check.Record:
		fields := t.Members(d.out.Compat != compat.V017)
		names := make([]string, len(fields))
		vals := make([]output.Value, len(fields))
		for i, f := range fields {
			names[i] = f.Name
			if f.Bits > 0 {
				vals[i] = output.Uint(bitfield(b[f.Offset:], f))
				continue
			}
			vals[i] = d.member(f.Type, b[f.Offset:f.Offset+f.Type.Size], r)
		}
		return output.Record(names, vals)
	case check.Buffer:
		n := t.Size - 1
		if t.VarLen && r != asKey {
			// In keys 0.17 prints the whole buffer whatever was read.
			n = min(n, int(b[n]))
		}
		return output.Buffer(append([]byte(nil), b[:n]...))
	case check.Ksym:
		addr := le.Uint64(b)
		return output.Ksym(addr, d.ksym(addr))
	case check.Usym:
		addr, pid := le.Uint64(b), int(le.Uint64(b[8:]))
		return output.Usym(addr, d.usym(pid, addr).Sym())
	case check.Inet:
		family := int64(le.Uint64(b))
		addr := b[8:24]
		if family == output.AFInet {
			addr = addr[:4]
		}
		return output.Inet(family, append([]byte(nil), addr...))
	case check.ProbeName:
		return output.Probe(d.target(le.Uint64(b)).FullName())
	case check.FuncName:
		return output.String(d.target(le.Uint64(b)).Func)
	case check.Username:
		return output.Username(username(le.Uint64(b)))
	case check.Timestamp:
		// A format glibc cannot fill prints as "(?)", as in bpftrace.
		text, _ := output.Strftime(t.Name, d.bootTime().Add(time.Duration(le.Uint64(b))))
		return output.Timestamp(text)
	case check.Strerror:
		return output.Strerror(int64(le.Uint64(b)))
	case check.Named:
		n := int64(int32(le.Uint64(b)))
		switch t.Name {
		case "syscall":
			return output.String(output.SyscallName(n))
		case "signal":
			return output.String(output.SignalName(n))
		}
		return output.String(output.KernelErrorText(n))
	case check.MacAddr:
		return output.MacAddr([6]byte(b[:6]))
	case check.CgroupPath:
		path, _ := kernel.CgroupPath(le.Uint64(b), t.Name)
		return output.CgroupPath(path)
	case check.Stack:
		return d.stack(t, le.Uint64(b))
	}
	return output.Uint(le.Uint64(b))
}

// member decodes an element of an array or a field of a record. In map
// keys, 0.17 prints the integers inside those signed at their own size.
func (d *decoder) member(t *check.Type, b []byte, r role) output.Value {
	if r == asKey && t.Kind == check.Int && !t.IsBool() {
		return output.IntN(word(b, t.Size), t.Size, true)
	}
	return d.value(t, b, r)
}

// bootTime is the wall time of boot, which strftime() adds nanoseconds
// since boot to: the real-time clock less the boot-time clock, as
// bpftrace computes it.
func (d *decoder) bootTime() time.Time {
	d.bootOnce.Do(func() {
		var ts unix.Timespec
		now := time.Now()
		if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil {
			d.boot = now.Add(-time.Duration(ts.Nano()))
		}
	})
	return d.boot
}

func (d *decoder) target(i uint64) *check.Target {
	if i < uint64(len(d.out.Targets)) {
		return d.out.Targets[i]
	}
	return &check.Target{Provider: "unknown"}
}

func (d *decoder) usym(pid int, addr uint64) elfsym.Frame {
	f, _ := d.usymSource(pid, addr, false)
	return f
}

// usymSource resolves addr in process pid and, when source is set and
// addr resolves to a symbol, finds where it lies in the source.
func (d *decoder) usymSource(pid int, addr uint64, source bool) (elfsym.Frame, elfsym.Source) {
	if d.noUserSymbols {
		return elfsym.Frame{Addr: addr}, elfsym.Source{}
	}
	s := d.usyms
	if d.noSymbolCache {
		// A symbolizer of its own: the shared one keeps what it reads.
		s = elfsym.NewSymbolizer()
	}
	f := s.Frame(pid, addr)
	program := f.Path == "" && d.program != "" && !d.noSymbolCache && gone(pid)
	if program {
		f = s.ProgramFrame(d.program, addr)
	}
	if !source || f.Symbol == "" {
		return f, elfsym.Source{}
	}
	// A file whose DWARF cannot be read prints as one without.
	var src elfsym.Source
	if program {
		src, _ = s.ProgramSource(d.program, addr)
	} else {
		src, _ = s.Source(pid, addr)
	}
	return f, src
}

// gone reports whether process pid has no memory left to look at: it
// has exited, reaped or not.
func gone(pid int) bool {
	maps, err := elfsym.ReadMaps(pid)
	return err != nil || len(maps) == 0
}

// probedProgram returns the one program file the uprobes and USDT probes
// of targets name, or "" when they name none or several: where the
// frames of a process gone may be looked up, as bpftrace 0.26.1 looks
// them up in the program its probe names.
func probedProgram(targets []*check.Target) string {
	program := ""
	for _, t := range targets {
		u, ok := t.Attach.(attach.Uprobe)
		if !ok {
			continue
		}
		if program != "" && u.Path != program {
			return ""
		}
		program = u.Path
	}
	return program
}

// stack looks a stack id up in its stack-trace map and symbolizes it,
// unless its mode prints addresses or build IDs.
func (d *decoder) stack(t *check.Type, v uint64) output.Value {
	id := uint32(v)
	var mode output.StackMode
	switch t.StackMode {
	case "perf":
		mode = output.StackPerf
	case "raw":
		mode = output.StackRaw
	case "build_id":
		return output.Ustack(output.StackBuildID, d.buildIDFrames(id, t.Frames))
	}
	var frames []output.Frame
	m := d.kstacks
	if t.User {
		m = d.ustacks
	}
	var addrs []uint64
	if m != nil && int32(id) >= 0 {
		raw, err := m.LookupBytes(id)
		if err == nil {
			for i := 0; i+8 <= len(raw); i += 8 {
				a := le.Uint64(raw[i:])
				if a == 0 {
					break
				}
				addrs = append(addrs, a)
			}
		}
	}
	if len(addrs) > t.Frames {
		addrs = addrs[:t.Frames]
	}
	for _, a := range addrs {
		switch {
		case mode == output.StackRaw:
			frames = append(frames, output.Frame{Addr: a})
		case t.User:
			f, src := d.usymSource(int(v>>32), a, d.debugInfo)
			fr := output.Frame{Addr: a, Symbol: f.Symbol, Offset: f.Offset, Module: f.Path,
				MapStart: f.MapStart, MapEnd: f.MapEnd, MapOffset: f.MapOffset, BuildID: f.BuildID,
				Source: fileLine(src.File, src.Line)}
			for _, in := range src.Inlined {
				fr.Inlined = append(fr.Inlined, output.Inlined{Name: in.Name, Source: fileLine(in.File, in.Line)})
			}
			frames = append(frames, fr)
		default:
			fr := output.Frame{Addr: a}
			if k := d.kallsyms(); k != nil {
				if s, off, ok := k.Lookup(a); ok {
					fr.Symbol, fr.Offset = s.Name, off
				}
			}
			frames = append(frames, fr)
		}
	}
	if t.User {
		return output.Ustack(mode, frames)
	}
	return output.Kstack(mode, frames)
}

// fileLine formats a source location as show_debug_info prints it,
// "FILE:LINE"; "" for an unknown file.
func fileLine(file string, line int) string {
	if file == "" {
		return ""
	}
	return file + ":" + strconv.Itoa(line)
}

// Statuses of a frame of a build-ID stack, the kernel's
// BPF_STACK_BUILD_ID_*: past the last frame, a file's build ID and
// offset, or the address alone.
const (
	buildIDEmpty = 0
	buildIDValid = 1
)

// buildIDFrames reads the frames of a ustack(build_id) from the map the
// kernel wrote them to, as struct bpf_stack_build_id records.
func (d *decoder) buildIDFrames(id uint32, limit int) []output.Frame {
	if d.buildID == nil || int32(id) < 0 {
		return nil
	}
	raw, err := d.buildID.LookupBytes(id)
	if err != nil {
		return nil
	}
	var frames []output.Frame
	for b := raw; len(b) >= codegen.BuildIDFrameSize && len(frames) < limit; b = b[codegen.BuildIDFrameSize:] {
		switch int32(le.Uint32(b)) {
		case buildIDEmpty:
			return frames
		case buildIDValid:
			frames = append(frames, output.Frame{BuildID: hex.EncodeToString(b[4:24]), Offset: le.Uint64(b[24:])})
		default:
			frames = append(frames, output.Frame{Addr: le.Uint64(b[24:])})
		}
	}
	return frames
}

// username names a uid as /etc/passwd does, or gives the number.
func username(uid uint64) string {
	if u, err := user.LookupId(strconv.FormatUint(uid, 10)); err == nil {
		return u.Username
	}
	return strconv.FormatUint(uid, 10)
}
