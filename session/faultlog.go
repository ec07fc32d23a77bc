package session

import (
	"bytes"
	"errors"
	goruntime "runtime"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// faultLogSize is the log buffer of a refusal reloaded for its log. The
// kernel keeps the log's tail since 6.4, which is what explains the
// refusal; older kernels keep its head, so it is large.
const faultLogSize = 16 << 20

// progLoadAttr is the start of the kernel's union bpf_attr for
// BPF_PROG_LOAD, up to the BTF that describes a program's functions.
type progLoadAttr struct {
	progType, insnCnt            uint32
	insns, license               uint64
	logLevel, logSize            uint32
	logBuf                       uint64
	kernVersion, flags           uint32
	name                         [16]byte
	ifindex, attachType          uint32
	btfFD, funcInfoRecSize       uint32
	funcInfo                     uint64
	funcInfoCnt, lineInfoRecSize uint32
	lineInfo                     uint64
	lineInfoCnt, attachBTFID     uint32
}

// withFaultLog returns err with the verifier's log when err is the
// EFAULT the verifier gives for a path of too many branches ("The
// sequence of 8193 jumps is too complex"): the loader drops the log of
// an EFAULT, so the program is loaded again, by the system call, to read
// it. Programs bound to a kernel function by BTF are left as they are.
func withFaultLog(ps *ebpf.ProgramSpec, err error) error {
	var ve *ebpf.VerifierError
	if !errors.Is(err, unix.EFAULT) || errors.As(err, &ve) || ps.AttachTo != "" {
		return err
	}
	var code bytes.Buffer
	if ps.Instructions.Marshal(&code, le) != nil {
		return err
	}
	insns := code.Bytes()
	license := []byte(ps.License + "\x00")
	log := make([]byte, faultLogSize)
	attr := progLoadAttr{
		progType:   uint32(ps.Type),
		insnCnt:    uint32(len(insns) / asm.InstructionSize),
		insns:      uint64(uintptr(unsafe.Pointer(&insns[0]))),
		license:    uint64(uintptr(unsafe.Pointer(&license[0]))),
		logLevel:   uint32(ebpf.LogLevelBranch),
		logSize:    uint32(len(log)),
		logBuf:     uint64(uintptr(unsafe.Pointer(&log[0]))),
		attachType: uint32(ps.AttachType),
	}
	// A program with subprograms, the callbacks of loops, is refused
	// without the BTF that describes its functions.
	var b btf.Builder
	funcInfos, lineInfos, err2 := btf.MarshalExtInfos(ps.Instructions, &b)
	if err2 != nil {
		return err
	}
	if len(funcInfos) > 0 {
		h, err2 := btf.NewHandle(&b)
		if err2 != nil {
			return err
		}
		defer h.Close()
		attr.btfFD = uint32(h.FD())
		attr.funcInfoRecSize, attr.funcInfoCnt = btf.FuncInfoSize, uint32(len(funcInfos))/btf.FuncInfoSize
		attr.funcInfo = uint64(uintptr(unsafe.Pointer(&funcInfos[0])))
		if len(lineInfos) > 0 {
			attr.lineInfoRecSize, attr.lineInfoCnt = btf.LineInfoSize, uint32(len(lineInfos))/btf.LineInfoSize
			attr.lineInfo = uint64(uintptr(unsafe.Pointer(&lineInfos[0])))
		}
	}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_PROG_LOAD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	// The attribute holds the buffers' addresses as numbers, which do not
	// keep them alive.
	goruntime.KeepAlive(insns)
	goruntime.KeepAlive(license)
	goruntime.KeepAlive(funcInfos)
	goruntime.KeepAlive(lineInfos)
	if errno == 0 {
		// Accepted the second time: nothing to explain.
		unix.Close(int(fd))
		return err
	}
	if i := bytes.IndexByte(log, 0); i >= 0 {
		log = log[:i]
	}
	log = bytes.TrimRight(log, "\n")
	if len(log) == 0 {
		return err
	}
	lines := bytes.Split(log, []byte("\n"))
	ve = &ebpf.VerifierError{Cause: err}
	for _, l := range lines {
		ve.Log = append(ve.Log, string(l))
	}
	return ve
}
