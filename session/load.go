package session

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/internal/inject"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// load creates the maps, then loads the programs one by one, so that a
// refusal names its probe and a kprobe compiled as a trampoline can fall
// back to its kprobe version.
func (s *Session) load() error {
	spec := s.out.Collection
	if err := inject.Fail(inject.Maps); err != nil {
		return fmt.Errorf("load: create maps: %w", err)
	}
	coll, err := ebpf.NewCollection(&ebpf.CollectionSpec{Maps: spec.Maps, Programs: map[string]*ebpf.ProgramSpec{}})
	if errors.Is(err, unix.EPERM) {
		return &privilegeError{"load: create maps", err}
	}
	if err != nil {
		return fmt.Errorf("load: create maps: %w", err)
	}
	s.coll = coll
	var kernelTypes *btf.Spec
	if s.needsBTF() {
		kernelTypes = loadKernelTypes()
	}
	prog := startProgress(s.opts.Progress, "loading %d of %d programs", len(s.out.Programs), progressAfter)
	defer prog.end()
	for _, p := range s.out.Programs {
		prog.step(1)
		if err := inject.Delay(s.ctx, inject.Load); err != nil {
			coll.Close()
			return err
		}
		if err := inject.Fail(inject.Load); err != nil {
			coll.Close()
			return s.explain(p, err)
		}
		prog, err := s.loadProgram(p, kernelTypes)
		if err != nil && p.Fallback != nil {
			if fbs, fbErr := s.loadPrograms(p.Fallback, kernelTypes); fbErr == nil {
				if s.opts.Verbose {
					fmt.Fprintf(s.opts.Stderr, "kinst: %s: %s refused (%v); using kprobes\n", p.Targets[0].FullName(), p.Mechanism, err)
				}
				for i, q := range p.Fallback {
					coll.Programs[q.Name] = fbs[i]
				}
				s.loaded = append(s.loaded, p.Fallback...)
				continue
			}
		}
		if err != nil {
			coll.Close()
			return s.explain(p, err)
		}
		coll.Programs[p.Name] = prog
		s.loaded = append(s.loaded, p)
	}
	return nil
}

// loadPrograms loads programs, all or none.
func (s *Session) loadPrograms(progs []*codegen.Program, kernelTypes *btf.Spec) ([]*ebpf.Program, error) {
	var loaded []*ebpf.Program
	for _, p := range progs {
		prog, err := s.loadProgram(p, kernelTypes)
		if err != nil {
			for _, l := range loaded {
				l.Close()
			}
			return nil, err
		}
		loaded = append(loaded, prog)
	}
	return loaded, nil
}

// loadProgram loads one program with its map references resolved.
func (s *Session) loadProgram(p *codegen.Program, kernelTypes *btf.Spec) (*ebpf.Program, error) {
	ps := p.Spec(s.out).Copy()
	done := map[string]bool{}
	for _, ins := range ps.Instructions {
		ref := ins.Reference()
		if !ins.IsLoadFromMap() || ref == "" || done[ref] {
			continue
		}
		done[ref] = true
		if err := ps.Instructions.AssociateMap(ref, s.coll.Maps[ref]); err != nil {
			return nil, fmt.Errorf("map %s: %w", ref, err)
		}
	}
	if tr, ok := p.Targets[0].Attach.(attach.Tracing); ok && tr.ProgID != 0 {
		// A trampoline on a BPF program is loaded against that program,
		// which the loaded one keeps a reference to.
		target, err := ebpf.NewProgramFromID(tr.ProgID)
		if err != nil {
			return nil, fmt.Errorf("open BPF program %d: %w", tr.ProgID, err)
		}
		defer target.Close()
		ps.AttachTarget = target
	}
	prog, err := ebpf.NewProgramWithOptions(ps, ebpf.ProgramOptions{KernelTypes: kernelTypes, LogSizeStart: s.opts.LogSize})
	if err != nil {
		return nil, withFaultLog(ps, err)
	}
	return prog, nil
}

// needsBTF reports whether loading needs the kernel's types, which take
// milliseconds to parse: trampoline programs name their kernel function
// by BTF (those on BPF programs find theirs in the program's).
func (s *Session) needsBTF() bool {
	for _, p := range s.out.Programs {
		if tr, ok := p.Targets[0].Attach.(attach.Tracing); ok && tr.ProgID != 0 {
			continue
		}
		if p.Spec(s.out).AttachTo != "" {
			return true
		}
	}
	return false
}

// loadKernelTypes is the kernel's BTF, shared so that it is parsed once;
// nil where the kernel has none.
func loadKernelTypes() *btf.Spec {
	spec, err := kernel.KernelBTF()
	if err != nil {
		return nil
	}
	return spec
}

// A VerifierError says why the kernel refused a probe's program, in the
// probe's terms: where in the source the refused instruction came from.
type VerifierError struct {
	Err *syntax.Error
	Log []string // the verifier's log, for -v
	// Cause is the loader's error, which wraps the kernel's errno:
	// errors.Is(err, unix.EPERM) tells a missing privilege.
	Cause error
}

func (e *VerifierError) Error() string { return e.Err.Error() }

// Unwrap returns the loader's error.
func (e *VerifierError) Unwrap() error { return e.Cause }

// Detail renders the error with its source line, and with verbose the
// tail of the verifier's log.
func (e *VerifierError) Detail(verbose bool) string {
	d := e.Err.Detail()
	if verbose && len(e.Log) > 0 {
		tail := e.Log
		if len(tail) > 30 {
			tail = tail[len(tail)-30:]
		}
		d += "\nverifier log (last lines):\n  " + strings.Join(tail, "\n  ")
	}
	return d
}

var insnLine = regexp.MustCompile(`^(\d+): \(`)

// verifierNoise starts the log lines that describe state, not the fault.
var verifierNoise = []string{"processed ", "verification time", "stack depth", "cur state:", "old state:", "from ", "last_idx", "regs=", "parent ", "mark_precise"}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// verifierHints say in the program's terms what common rejections mean;
// a loop's rejection points at the loop rather than at the instruction
// the verifier stopped on.
var verifierHints = []struct {
	match, say string
	loop       bool
}{
	{"infinite loop detected", "this loop may never end: the verifier cannot see its condition become false", true},
	// The path of a loop whose bound the verifier cannot know grows by
	// a branch a round until it stops at 8192 (an EFAULT).
	{"jumps is too complex", "the verifier cannot prove this loop ends: bound it by a constant, or unroll it", true},
	{"BPF program is too large", "the program is too complex for the verifier: a loop runs too many rounds or branches on values it cannot follow; bound the loop by a smaller constant, or unroll it", true},
	{"back-edge", "this loop cannot be proven to end", true},
	{"invalid mem access", "memory is read through a value the verifier does not know to be a valid pointer", false},
	{"invalid indirect read from stack", "a buffer is read before all of it was written", false},
	{"unbounded memory access", "an index or size has no bound the verifier can see; compare it with a constant first", false},
	{"combined stack size", "the probe uses more than the 512 bytes of stack BPF allows", false},
	{"unknown func", "this kernel lacks a helper the program needs", false},
}

// refusedHelper finds the helper in the verifier's refusal of a call:
// "program of this type cannot use helper bpf_probe_read#4", or on
// kernels before 6.3 "unknown func bpf_probe_read#4".
var refusedHelper = regexp.MustCompile(`(?:cannot use helper|unknown func) (\w+)#\d+`)

// enclosingLoop is the innermost while or for loop of n around pos, or nil.
func enclosingLoop(n syntax.Node, pos syntax.Pos) syntax.Node {
	var loop syntax.Node
	syntax.Inspect(n, func(c syntax.Node) bool {
		if c == nil || pos < c.Pos() || pos >= c.End() {
			return false
		}
		switch c.(type) {
		case *syntax.WhileStmt, *syntax.ForStmt:
			loop = c
		}
		return true
	})
	return loop
}

// explain turns a load failure into an error that names the probe and
// points at the source.
func (s *Session) explain(prog *codegen.Program, err error) error {
	probe := prog.Probe.Syntax
	file := s.out.File
	where := probe.Pos()
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		return &VerifierError{Err: &syntax.Error{File: file, Pos: where, End: probe.Points[0].End(),
			Msg: fmt.Sprintf("cannot load probe %s as %s: %v", prog.Targets[0].FullName(), prog.Mechanism, err)}, Cause: err}
	}
	// The last instruction the verifier reached is where it gave up.
	reason := ""
	insn := -1
	for _, line := range ve.Log {
		if m := insnLine.FindStringSubmatch(line); m != nil {
			insn, _ = strconv.Atoi(m[1])
		}
	}
	for i := len(ve.Log) - 1; i >= 0; i-- {
		l := strings.TrimSpace(ve.Log[i])
		if l == "" || insnLine.MatchString(l) || strings.HasPrefix(l, ";") || hasAnyPrefix(l, verifierNoise) {
			continue
		}
		reason = l
		break
	}
	if reason == "" {
		// A log with no line to quote (the verifier stopped early, or
		// the log was cut): the errno is all there is to say.
		reason = fmt.Sprintf("%v, with no reason in its log", ve.Cause)
	}
	end := where + 1
	if insn >= 0 && insn < len(prog.Pos) && prog.Pos[insn].IsValid() {
		where = prog.Pos[insn]
		end = where + 1
	}
	hints := verifierHints
	if m := refusedHelper.FindStringSubmatch(reason); m != nil && prog.Mechanism == codegen.MechXDP {
		// The caret is under the builtin or call that needs it.
		reason = fmt.Sprintf("test and bench probes run as XDP programs, which may not call %s (%s)", m[1], reason)
		hints = nil
	}
	for _, h := range hints {
		if !strings.Contains(reason, h.match) {
			continue
		}
		reason = h.say + " (" + reason + ")"
		if loop := enclosingLoop(probe, where); h.loop && loop != nil {
			// The caret goes under the loop's keyword.
			where = loop.Pos()
			end = where + syntax.Pos(len("while"))
			if _, ok := loop.(*syntax.ForStmt); ok {
				end = where + syntax.Pos(len("for"))
			}
		}
		break
	}
	msg := fmt.Sprintf("the kernel verifier rejected probe %s: %s", prog.Targets[0].FullName(), reason)
	return &VerifierError{Err: &syntax.Error{File: file, Pos: where, End: end, Msg: msg}, Log: ve.Log, Cause: err}
}

// Load loads a compiled program into the kernel and unloads it again:
// what --dry-run does to prove the verifier accepts every probe.
func Load(out *codegen.Output, opts *Options) error {
	s := &Session{out: out, opts: opts, ctx: context.Background()}
	if err := s.load(); err != nil {
		return s.fileLimit(err)
	}
	s.coll.Close()
	return nil
}

// A FileLimitError says that the probes need more file descriptors than
// the open-file limit allows: each program, map and link is one. Go
// raises the soft limit to the hard one at start, so the hard limit is
// the one to raise. The kernel's EMFILE would otherwise surface as a
// verifier refusal with no reason, or as the error of whichever step
// met it; the error matches unix.EMFILE only, not the step's error.
type FileLimitError struct {
	Probes int    // the probes the program attaches
	Limit  uint64 // RLIMIT_NOFILE, soft
}

func (e *FileLimitError) Error() string {
	return fmt.Sprintf("%d probes exceed the open-file limit of %d (each takes a file descriptor or more): raise it with ulimit -n, or trace fewer", e.Probes, e.Limit)
}

func (e *FileLimitError) Unwrap() error { return unix.EMFILE }

// fileLimit turns err into a *FileLimitError when it comes of the
// open-file limit.
func (s *Session) fileLimit(err error) error {
	if !attach.IsErrno(err, unix.EMFILE) {
		return err
	}
	var lim unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	return &FileLimitError{Probes: len(s.out.Targets), Limit: lim.Cur}
}

// A privilegeError is the kernel's EPERM for a step only a privileged
// process may take. It says so in place of the loader's hint about
// RLIMIT_MEMLOCK, which misleads on kernels that account BPF memory to
// the cgroup (5.11 and later), and matches unix.EPERM.
type privilegeError struct {
	step string
	err  error
}

func (e *privilegeError) Error() string {
	return e.step + ": operation not permitted: kinst needs root, or CAP_BPF and CAP_PERFMON"
}

func (e *privilegeError) Unwrap() error { return e.err }
