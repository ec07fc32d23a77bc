package codegen

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/syntax"
)

// Names of the maps every program may use, as the instructions refer to
// them.
const (
	EventsMap  = "events"  // ring buffer carrying action records
	LostMap    = "lost"    // counters user space reads through a memory mapping: see LostRecords
	ScratchMap = "scratch" // per-CPU memory (or an array of a slice per CPU) for values too large for the stack, shared by programs that never nest
	ConstsMap  = "consts"  // values user space fills in before attaching
	KstackMap  = "kstacks" // stack traces for kstack
	UstackMap  = "ustacks" // stack traces for ustack
	// BuildIDStackMap holds the stack traces of ustack(build_id): each
	// frame as the build ID of its file and its offset there.
	BuildIDStackMap = "ustacks_buildid"
	PacketsMap      = "packets" // perf event array skboutput() writes packets to
)

// OwnScratchMap is the per-CPU scratch memory (or an array of a slice
// per CPU) of programs that may run nested in other programs: each has a
// region of its own.
const OwnScratchMap = "scratch_own"

// The lost map holds 64-bit counters: at LostRecords the records the
// ring buffer refused, at LostStacks the stacks the stack-trace maps
// refused, at FullOffset(m) the updates of map m refused because it was
// full.
const (
	LostRecords = 0
	LostStacks  = 8
	lostFixed   = 2 // the counters before the maps'
)

// FullOffset is where the lost map counts the updates m refused because
// it was full.
func FullOffset(m *Map) int { return 8 * (lostFixed + m.Index) }

// Offsets of the values user space writes into the consts map.
const (
	ConstStartTime = 0 // ktime at start, for elapsed
	ConstCpid      = 8 // pid of the -c command, for cpid
	constsSize     = 16
)

// Output is everything code generation produces for one program.
type Output struct {
	File       *syntax.File // the source, for positions
	Collection *ebpf.CollectionSpec
	Programs   []*Program
	Maps       []*Map    // the program's @maps, in order of first appearance
	Actions    []*Action // indexed by action id
	// Targets lists every target of every program. The probe and func
	// builtins evaluate to an index into it.
	Targets []*check.Target
	// EventsSize is the ring buffer's size in bytes.
	EventsSize int
	// SkbOutputs are the skboutput() calls, indexed by the id their
	// packets carry.
	SkbOutputs []*SkbOutput
	// Compat is the bpftrace release whose output the program prints.
	Compat compat.Version
	// StrLen is bpftrace's max_strlen, the size of str() results: a
	// string of that size without a NUL was cut short. A char array of
	// a struct fills its size without being cut.
	StrLen int
	// Settings are the program's config block's, for the run.
	Settings check.Settings
}

// An SkbOutput is one skboutput() call: its packets go to a pcap file.
// Each comes through PacketsMap as a PacketHeaderSize header (the id,
// the boot time in nanoseconds and the bytes captured, three uint64s)
// followed by the captured bytes, which the kernel appends.
type SkbOutput struct {
	Path   string // the pcap file
	Offset uint64 // bytes of each packet left out of the file
}

// PacketHeaderSize is the size of the header of a packet's record.
const PacketHeaderSize = 24

// A Program is the BPF program of one checked probe, with the targets it
// attaches to.
type Program struct {
	Name    string // the key of its spec in Collection.Programs
	Probe   *check.Probe
	Targets []*check.Target
	// FirstTarget is the index in Output.Targets of Targets[0]; the
	// others follow it.
	FirstTarget int
	// IDs are what probe and func yield for each target, and so its
	// attach cookie: its index in Output.Targets, or that of the first
	// target of the same name.
	IDs []uint64
	// Mechanism is how the program attaches, and Why says why it was
	// chosen.
	Mechanism Mechanism
	Why       string
	// Return, for a kprobe session, is the kretprobe whose block the
	// program runs at the functions' return; Probe is the kprobe, whose
	// block it runs at their entry. The kretprobe's targets follow the
	// kprobe's in Output.Targets; Targets are the kprobe's alone, which
	// the session link attaches.
	Return *check.Probe
	// Fallback is what is used instead if the kernel refuses to load or
	// attach the first choice: for a kprobe compiled as a trampoline or
	// for kprobe.multi the same probe compiled as a kprobe, for a kprobe
	// session its kprobe and its kretprobe compiled as kprobes.
	Fallback []*Program
	// Cookies is set when the program serves several targets and tells
	// them apart by the attach cookie, which must then be each target's
	// entry in IDs.
	Cookies bool
	// Pos maps an instruction index to the source position it came from,
	// for -d and for explaining verifier rejections.
	Pos []syntax.Pos
}

// Spec returns the program's spec in out's collection.
func (p *Program) Spec(out *Output) *ebpf.ProgramSpec { return out.Collection.Programs[p.Name] }

// A Map describes how one @map is stored.
type Map struct {
	*check.Map
	Spec   string // the key of its spec in Collection.Maps
	PerCPU bool   // each CPU keeps its own value, to be combined
	// Key is the stored key: the map's key tuple, with a trailing uint64
	// bucket index for hist and lhist; for a map without keys, a single
	// zero uint64.
	Key *check.Type
	// ValueSize is the size of one CPU's value.
	ValueSize int
	// Index is the map's place in Output.Maps.
	Index int
}

// ActionKind says what an action record asks user space to do.
type ActionKind int

// The kinds of action.
const (
	ActPrintf ActionKind = iota
	ActSystem
	ActCat
	ActPrintMap
	ActPrintValue
	ActClear
	ActZero
	ActExit
	ActTime
	ActJoin
	ActHelperError // -k: a helper failed; Text names it, Args carry its error
	ActCore        // core(): dump the stopped process to Text; Args carry pid_tgid
	ActWatch       // set the watchpoint Target at the address Args carry, running Program
	ActUnwatch     // unwatch(): remove the watchpoints at the address Args carry
	ActErrorf      // errorf(): an error at Pos to End, formatted as printf
	ActWarnf       // warnf(): a warning at Pos to End, formatted as printf
	ActDivZero     // 0.26.1: a division or modulo by 0 at Pos to End, which gave 1
)

// An Action is what one call site asks of user space. Its record in the
// ring buffer is a uint64 action id followed by Args laid out as a tuple.
type Action struct {
	ID   int
	Kind ActionKind
	Pos  syntax.Pos
	End  syntax.Pos // errorf, warnf and helper errors: the end of the call or expression, for the range they name
	// Origin, when set, is the place errorf and warnf name instead of
	// Pos to End.
	Origin *check.Origin
	// Probe is the probe whose program sends the records: its targets
	// are what the probe builtin in them names.
	Probe  *check.Probe
	Format *output.Format // printf, system, cat
	Args   *check.Type    // tuple of the arguments carried, or nil
	Map    *Map           // print, clear, zero
	Top    uint64         // print
	Div    uint64         // print
	Text   string         // time's format, join's separator
	// JoinArgs and JoinLen give join's layout: JoinArgs strings of
	// JoinLen bytes each.
	JoinArgs, JoinLen int
	// Target and Program are the watchpoint a watch action sets and the
	// program it runs.
	Target  *check.Target
	Program *Program
}

// headerSize is the size of the action id that starts every record.
const headerSize = 8

// RecordSize is the size of an action's records.
func (a *Action) RecordSize() int {
	if a.Args == nil {
		return headerSize
	}
	return headerSize + a.Args.Size
}

func (k ActionKind) String() string {
	switch k {
	case ActPrintf:
		return "printf"
	case ActSystem:
		return "system"
	case ActCat:
		return "cat"
	case ActPrintMap:
		return "print map"
	case ActPrintValue:
		return "print"
	case ActClear:
		return "clear"
	case ActZero:
		return "zero"
	case ActExit:
		return "exit"
	case ActErrorf:
		return "errorf"
	case ActWarnf:
		return "warnf"
	case ActTime:
		return "time"
	case ActJoin:
		return "join"
	case ActHelperError:
		return "helper error"
	case ActDivZero:
		return "divide by zero"
	case ActCore:
		return "core"
	case ActWatch:
		return "watch"
	case ActUnwatch:
		return "unwatch"
	}
	return fmt.Sprintf("action(%d)", int(k))
}

// Instructions returns a program's instructions.
func (p *Program) Instructions(out *Output) asm.Instructions { return p.Spec(out).Instructions }
