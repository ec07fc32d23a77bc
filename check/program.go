package check

import (
	"errors"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/syntax"
	"kinst.dev/kinst/usdt"
)

// A Resolver turns an attach point into the concrete targets it names,
// expanding wildcards, and describes each target's context. Package
// attach provides the real one; tests use fakes.
type Resolver interface {
	Resolve(ap *syntax.AttachPoint) ([]*Target, error)
}

// ErrNoTarget marks a Resolver's error that says an attach point names
// nothing on this system (a function, a USDT probe), as opposed to one
// written wrongly or a system that cannot be asked. In a probe whose
// other attach points resolve, such an error is a warning and the point
// is left out, as bpftrace leaves it out: sslsnoop.bt's list of OpenSSL
// functions runs against an OpenSSL that lacks some of them.
var ErrNoTarget = errors.New("no such target")

// NoTarget marks err as saying that an attach point names nothing:
// errors.Is(NoTarget(err), ErrNoTarget) reports true, and the message is
// err's.
func NoTarget(err error) error { return noTarget{err} }

type noTarget struct{ error }

func (e noTarget) Unwrap() error      { return e.error }
func (noTarget) Is(target error) bool { return target == ErrNoTarget }

// A ListError is an error about an attach point that a listing of the
// probes that exist answers. Its message is Err's, the fact alone: the
// kinst command adds how to list them, as "kinst -l PATTERN".
type ListError struct {
	Err     error
	Pattern string // a probe pattern that lists what exists
	Pid     int    // when not 0, list what process Pid maps
	Listed  string // what the listing holds: "them", "similar ones"
}

func (e *ListError) Error() string { return e.Err.Error() }
func (e *ListError) Unwrap() error { return e.Err }

// ErrUnsafe matches the error for a call of a builtin that changes the
// system it runs on (system(), signal(), override(), core()) in a
// program that Config.Unsafe does not allow to.
var ErrUnsafe = errors.New("not allowed to change the system")

// A Target is one concrete place a probe fires.
type Target struct {
	Provider string // full provider name, as in syntax.AttachPoint
	// Name is what follows the provider in the probe's full name:
	// "syscalls:sys_enter_openat", "vfs_read", "/bin/bash:readline",
	// "hz:99". The builtin probe prints Provider + ":" + Name.
	Name string
	Func string // the function or event name alone: "readline", "sys_enter_openat"

	// Args is the record args refers to, or nil where the target has no
	// typed arguments.
	Args *Type
	// ArgsFrom, when set, works Args out for a probe that reads args:
	// reading a binary's DWARF costs more than the programs that never
	// read args should pay. Its error says why there are none.
	ArgsFrom func() (*Type, error)
	argsErr  error
	// UserType, for a target in a user binary, looks a struct, union,
	// enum (kind STRUCT, UNION, ENUM) or typedef (IDENT) up in the
	// binary's debug information, for casts in its probes.
	UserType func(kind syntax.Token, name string) (*Type, error)
	// Ret is the type of retval where the target knows it (fexit and
	// kretprobe with BTF).
	Ret *Type
	// NumArgs bounds arg0..argN where the target knows its arity;
	// 0 means the architecture's limit.
	NumArgs int
	// Typed is set for a kernel function that BTF describes: a BPF
	// trampoline can reach it, and NumArgs is its arity.
	Typed bool
	// NoFtrace is set for a kernel function kallsyms lists but ftrace
	// cannot reach: only a kprobe link of its own attaches to it, not
	// kprobe.multi nor a trampoline.
	NoFtrace bool
	// USDT holds the argument operands of a USDT probe site, which
	// arg0..argN read.
	USDT []usdt.Arg
	// Watch, for a watchpoint on a function's argument, says where the
	// address comes from; the target has no address until then.
	Watch *WatchSetup

	// Point is the attach point in the source the target comes from,
	// for errors that concern the target alone.
	Point *syntax.AttachPoint
	// Warning, when set, tells the user how the target was found where
	// that is not what the attach point says, such as a function found
	// in a library the named one loads.
	Warning string

	// Returns is the type BTF gives a kretprobe's function's return
	// value, which retval does not take (it is a uint64 unless cast, as
	// in bpftrace), for those that format it, as kinst trace does; nil
	// for a function returning void, or without BTF.
	Returns *Type
	// Label, when set, is what the probe builtin prints in place of
	// Provider:Name: bpftrace 0.26.1 names BEGIN and END "begin" and
	// "end".
	Label string

	// Attach holds what package attach needs to attach this target;
	// the checker does not look inside.
	Attach any
}

// FullName is the target's name as the probe builtin prints it.
func (t *Target) FullName() string {
	if t.Label != "" {
		return t.Label
	}
	if t.Name == "" {
		return t.Provider
	}
	return t.Provider + ":" + t.Name
}

// A WatchSetup describes watchpoint:FUNC+argN: a uprobe at Entry reads
// argument Arg and hands its value to user space, which then sets the
// watchpoint on that address in the traced process. Unless Async, the
// uprobe stops the process until the watchpoint is set, so that no
// access is missed.
type WatchSetup struct {
	Entry *Target
	Arg   int
	Async bool
}

// A Program is a checked program: the syntax tree with the side tables
// code generation needs.
type Program struct {
	Syntax *syntax.Program
	Probes []*Probe
	Maps   []*Map // in order of first appearance
	Params []string
	// Compat is the bpftrace release whose meaning and output the
	// program has.
	Compat compat.Version
	// StrLen is the size of str() results, bpftrace's max_strlen.
	StrLen int

	mapIndex map[string]*Map
}

// Map returns the map called name ("" for @), or nil.
func (p *Program) Map(name string) *Map { return p.mapIndex[name] }

// A Probe is one probe of the source checked against one set of targets
// that share a context: the same provider and, where the body reads args,
// the same argument layout. A source probe whose attach points differ in
// those respects becomes several Probes.
type Probe struct {
	Syntax   *syntax.Probe
	Provider string
	Targets  []*Target
	Args     *Type // the record args refers to, if the body uses it
	Ret      *Type // retval's type, if known

	Types  map[syntax.Expr]*Type // the type of every expression
	Consts map[syntax.Expr]Const // the value of constant expressions
	Vars   map[string]*Var
	Calls  map[*syntax.CallExpr]*Call
	// Expand maps a builtin the checker defines by another expression,
	// as ppid by curtask->real_parent->pid and pid() by pid, to that
	// expression, which code generation generates in its place.
	Expand map[syntax.Expr]syntax.Expr
	// Uses records which context-dependent builtins the body reads, so
	// code generation and attachment can pick what the probe needs.
	Uses map[string]bool
}

// A Var is a scratch variable; it lives as long as one run of a probe.
type Var struct {
	Name string
	Type *Type
	// Declared is set for a let with a type annotation: the type is
	// fixed, and every value stored must fit it.
	Declared bool
}

// A Map is a BPF map named in the program.
type Map struct {
	Name  string  // without the @; "" for @
	Keys  []*Type // nil for a map without keys
	Key   *Type   // the key as stored: a tuple of Keys, or nil
	Value *Type   // an aggregation kind or a plain value type
	Pos   syntax.Pos
	// Read is set when some probe reads the map's elements, which rules
	// out per-CPU storage for non-aggregations.
	Read bool
	// Kind and Entries are what a declaration (let @m = lruhash(100))
	// says: the kernel map kind, and its size; "" and 0 for a map the
	// program does not declare.
	Kind    string
	Entries int
}

// Display is the map's name as output shows it: "@name" or "@".
func (m *Map) Display() string { return "@" + m.Name }

// A Const is the value of a constant expression: an integer or a string.
type Const struct {
	IsStr bool
	Int   uint64 // two's complement bits; the expression's type gives the sign
	Str   string
}

// A Call records how a builtin function call was resolved.
type Call struct {
	Func string
	// Format is the parsed format of printf, system and cat.
	Format *output.Format
	// Text is the constant text argument of time, join's separator,
	// kaddr's symbol, reg's register name and skboutput's file.
	Text string
	// Offset is skboutput's: the bytes at the start of each packet the
	// file leaves out; comm(pid)'s: where struct task_struct holds comm;
	// and a moved uaddr()'s: the symbol's address in its binary.
	Offset uint64
	// Inode is a moved uaddr()'s: the binary's inode, whose lowest
	// mapping in the process is where the process loaded it.
	Inode uint64
	// ID is percpu_kaddr's: the kernel BTF id of its variable.
	ID uint32
	// Space is where str, buf and join read from.
	Space AddrSpace
	// Top and Div are print's optional limits for a whole map.
	Top, Div uint64
	// Map is the map a map function (print, clear, zero, delete,
	// has_key, len) names, or that an aggregation is assigned to.
	Map *Map
	// Elems are the elements delete and has_key name, as @m[key]
	// whatever form the call takes.
	Elems []*syntax.MapExpr
	// Then are the calls assert() makes when its condition fails, and
	// comm(pid) when no task has the pid.
	Then []*syntax.CallExpr
	// Origin, when set, is where errorf and warnf report from instead
	// of the call's place in the program.
	Origin *Origin
}

// An Origin is a place in a file other than the program's, as the
// location an error names.
type Origin struct {
	File              string
	Line, Col, EndCol int
}
