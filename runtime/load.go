package runtime

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// load creates the maps and loads the programs.
func (s *Session) load() error {
	var opts ebpf.CollectionOptions
	if s.needsBTF() {
		opts.Programs.KernelTypes = kernelTypes()
	}
	coll, err := ebpf.NewCollectionWithOptions(s.out.Collection, opts)
	if err != nil {
		return s.explain(err)
	}
	s.coll = coll
	return nil
}

// needsBTF reports whether loading needs the kernel's types, which take
// milliseconds to parse: trampoline programs name their function by BTF.
func (s *Session) needsBTF() bool {
	for _, spec := range s.out.Collection.Programs {
		if spec.AttachTo != "" {
			return true
		}
	}
	return false
}

// kernelTypes is the kernel's BTF, shared so that it is parsed once;
// nil where the kernel has none.
func kernelTypes() *btf.Spec {
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
}

func (e *VerifierError) Error() string { return e.Err.Error() }

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

// explain turns a load failure into an error that names the probe and
// points at the source.
func (s *Session) explain(err error) error {
	name, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), "program "), ":")
	var prog *codegen.Program
	for _, p := range s.out.Programs {
		if p.Name == name {
			prog = p
		}
	}
	if prog == nil {
		return fmt.Errorf("%w: %v", ErrLoad, err)
	}
	probe := prog.Probe.Syntax
	file := s.out.File
	where := probe.Pos()
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		return &VerifierError{Err: &syntax.Error{File: file, Pos: where, End: probe.Points[0].End(),
			Msg: fmt.Sprintf("cannot load probe %s: %v", prog.Targets[0].FullName(), errors.Unwrap(err))}}
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
		if l == "" || strings.HasPrefix(l, "processed ") || strings.HasPrefix(l, "verification time") || strings.HasPrefix(l, "stack depth") {
			continue
		}
		reason = l
		break
	}
	end := where + 1
	if insn >= 0 && insn < len(prog.Pos) && prog.Pos[insn].IsValid() {
		where = prog.Pos[insn]
		end = where + 1
	}
	msg := fmt.Sprintf("the kernel verifier rejected probe %s: %s", prog.Targets[0].FullName(), reason)
	return &VerifierError{Err: &syntax.Error{File: file, Pos: where, End: end, Msg: msg}, Log: ve.Log}
}

// Load loads a compiled program into the kernel and unloads it again:
// what --dry-run does to prove the verifier accepts every probe.
func Load(out *codegen.Output) error {
	s := &Session{out: out}
	if err := s.load(); err != nil {
		return err
	}
	s.coll.Close()
	return nil
}
