package session

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/internal/coredump"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/syntax"
)

// handle carries out one action record.
func (s *Session) handle(rec []byte) {
	if len(rec) < 8 {
		return
	}
	id := le.Uint64(rec)
	if id >= uint64(len(s.out.Actions)) {
		fmt.Fprintf(s.opts.Stderr, "kinst: record for unknown action %d\n", id)
		return
	}
	a := s.out.Actions[id]
	body := rec[8:]
	var err error
	// A failed helper (-k) is a warning on Stderr either way.
	if s.opts.Records != nil && a.Kind != codegen.ActHelperError && a.Kind != codegen.ActErrorf && a.Kind != codegen.ActWarnf {
		err = s.record(a, body)
		if err != nil {
			fmt.Fprintf(s.opts.Stderr, "kinst: %s: %v\n", a.Kind, err)
		}
		return
	}
	switch a.Kind {
	case codegen.ActPrintf:
		args := s.decodeArgs(a, body)
		handled := false
		if s.opts.Printf != nil {
			handled, err = s.opts.Printf(s.buf, a, args)
		}
		if !handled && err == nil {
			err = s.w.Printf(a.Format, args)
		}
	case codegen.ActSystem:
		err = s.system(a, body)
	case codegen.ActCat:
		err = s.cat(a, body)
	case codegen.ActPrintMap:
		var m *output.Map
		if m, err = s.readMap(a.Map, s.dec); err == nil {
			handled := false
			if s.opts.PrintMap != nil {
				handled, err = s.opts.PrintMap(s.buf, m, uint32(a.Top), uint32(a.Div))
			}
			if !handled && err == nil {
				err = s.w.Map(m, uint32(a.Top), uint32(a.Div))
			}
		}
	case codegen.ActPrintValue:
		err = s.w.Value(s.dec.value(a.Args.Elems[0], body[a.Args.Offsets[0]:], asValue))
	case codegen.ActClear:
		err = s.clearMap(a.Map, false)
	case codegen.ActZero:
		err = s.clearMap(a.Map, true)
	case codegen.ActExit:
		s.exit(a, body)
	case codegen.ActHelperError:
		s.errCount++
		if s.opts.NoWarnings {
			break
		}
		errno := int64(le.Uint64(body[a.Args.Offsets[0]:]))
		old := s.out.Compat == compat.V017
		he := output.HelperError{Helper: a.Text, Retcode: errno}
		if s.jsonDiagnostics() {
			// Both releases report it in the output, as an object there.
			p := s.out.File.Position(a.Pos)
			he.File, he.Line, he.Column = s.sourceName(p.Filename), p.Line, p.Column
			err = s.w.HelperError(he)
			break
		}
		s.buf.Flush()
		if old || a.End <= a.Pos {
			w := &syntax.Error{File: s.out.File, Pos: a.Pos, End: a.Pos, Msg: "WARNING: " + he.Message(old)}
			fmt.Fprintln(s.diagnostics(), w.Detail())
			break
		}
		// 0.26.1 gives the expression's columns and marks it.
		p, src := s.out.File.Locate(a.Pos)
		e, _ := s.out.File.Locate(a.End)
		var b strings.Builder
		fmt.Fprintf(&b, "%s:%d:%d-%d: WARNING: %s\n", s.sourceName(p.Filename), p.Line, p.Column, e.Column, he.Message(old))
		writeMarked(&b, src, p.Column, e.Column)
		_, err = io.WriteString(s.diagnostics(), b.String())
	case codegen.ActErrorf, codegen.ActWarnf:
		err = s.diagnostic(a, body)
	case codegen.ActDivZero:
		err = s.runtimeWarning(a, "Divide or modulo by 0 detected. This can lead to unexpected results. 1 is being used as the result.")
	case codegen.ActCore:
		var msg string
		if msg, err = s.dumpCore(a, body); err == nil {
			err = s.w.System(msg)
		}
	case codegen.ActWatch:
		err = s.setWatch(a, body)
	case codegen.ActUnwatch:
		err = s.unwatch(a, body)
	case codegen.ActTime:
		err = s.w.Time(a.Text, time.Now())
	case codegen.ActJoin:
		var elems []string
		for i := 0; i < a.JoinArgs; i++ {
			e := cstring(body[i*a.JoinLen : (i+1)*a.JoinLen])
			if e == "" {
				break
			}
			elems = append(elems, e)
		}
		err = s.w.Join(elems, a.Text)
	}
	if err != nil && s.outw.err == nil {
		fmt.Fprintf(s.opts.Stderr, "kinst: %s: %v\n", a.Kind, err)
	}
}

// exit ends the run for exit(), keeping the code it was given: its one
// argument, where it has one.
func (s *Session) exit(a *codegen.Action, body []byte) {
	s.exited = true
	s.stopping.Store(true)
	if a.Args != nil {
		s.exitCode = int(s.dec.value(a.Args.Elems[0], body[a.Args.Offsets[0]:], asArg).Int())
	}
}

// decodeArgs decodes a record's arguments into a slice reused across
// records of the same action.
func (s *Session) decodeArgs(a *codegen.Action, body []byte) []output.Value {
	if a.Args == nil {
		return nil
	}
	vals := s.args[a.ID]
	if vals == nil {
		vals = make([]output.Value, len(a.Args.Elems))
		s.args[a.ID] = vals
	}
	for i, t := range a.Args.Elems {
		vals[i] = s.dec.value(t, body[a.Args.Offsets[i]:], asArg)
	}
	return vals
}

// system runs a command through the shell and prints what it printed.
func (s *Session) system(a *codegen.Action, body []byte) error {
	line, err := a.Format.Sprint(s.decodeArgs(a, body))
	if err != nil {
		return err
	}
	s.buf.Flush()
	out, err := s.shell(line)
	if out != "" {
		if werr := s.w.System(out); werr != nil {
			return werr
		}
	}
	return err
}

// shell runs line through the shell and returns what it printed.
func (s *Session) shell(line string) (string, error) {
	if s.ctx.Err() != nil {
		return "", nil // a signal ends the run: no more commands start
	}
	// A signal kills the command in progress, so that kinst ends at
	// once however long it runs; a pipe its children hold open is given
	// up soon after.
	cmd := exec.CommandContext(s.ctx, "/bin/sh", "-c", line)
	cmd.WaitDelay = 50 * time.Millisecond
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.Output()
	if s.ctx.Err() != nil {
		return "", nil
	}
	if _, isExit := err.(*exec.ExitError); isExit {
		err = nil // the command's own failure is its output's business
	}
	return string(out), err
}

// dumpCore writes the core of the process a core() call stopped, then
// lets it go on whatever happened. It says what it wrote.
func (s *Session) dumpCore(a *codegen.Action, body []byte) (string, error) {
	pidTgid := le.Uint64(body[a.Args.Offsets[0]:])
	pid, tid := int(pidTgid>>32), int(uint32(pidTgid))
	defer syscall.Kill(pid, syscall.SIGCONT)
	if _, err := coredump.Dump(a.Text, pid, tid, nil); err != nil {
		return "", fmt.Errorf("core of pid %d: %w", pid, err)
	}
	return fmt.Sprintf("core of pid %d written to %s\n", pid, a.Text), nil
}

// cat prints a file's contents.
func (s *Session) cat(a *codegen.Action, body []byte) error {
	path, err := a.Format.Sprint(s.decodeArgs(a, body))
	if err != nil {
		return err
	}
	data, err := s.readCat(path)
	if err != nil {
		return err
	}
	return s.w.Cat(data)
}

// readCat reads as much of a file as cat() prints.
func (s *Session) readCat(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	limit := s.opts.CatMax
	switch {
	case s.opts.NoCat:
		limit = 0
	case limit == 0:
		limit = DefaultCatMax
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	return string(data), err
}

// A Record is one record a program sent, decoded for Options.Records.
type Record struct {
	Kind RecordKind
	// Action is the statement that sent it; nil for RecLost.
	Action *codegen.Action
	// Args are the arguments of printf(), system() and cat(), or the
	// value of print(). They are valid until the handler returns.
	Args []output.Value
	// Text is printf()'s formatted text, what system() printed, the
	// file cat() read, or time()'s text.
	Text string
	// Command is system()'s command line, or the path cat() read.
	Command string
	Map     *output.Map // print(@map)
	Elems   []string    // join()
	Lost    uint64      // RecLost: records the ring buffer refused
	Code    int         // RecExit: the code exit() was given
}

// RecordKind says what a Record is.
type RecordKind int

// The kinds of Record.
const (
	RecPrintf   RecordKind = iota
	RecPrint               // print(value)
	RecPrintMap            // print(@map)
	RecSystem
	RecCat
	RecTime
	RecJoin
	RecExit
	RecLost
)

// record decodes one record for Options.Records; clear() and zero() are
// carried out and not reported.
func (s *Session) record(a *codegen.Action, body []byte) error {
	r := &Record{Action: a}
	var err error
	switch a.Kind {
	case codegen.ActPrintf:
		r.Kind, r.Args = RecPrintf, s.decodeArgs(a, body)
		r.Text, err = a.Format.Sprint(r.Args)
	case codegen.ActSystem:
		r.Kind, r.Args = RecSystem, s.decodeArgs(a, body)
		if r.Command, err = a.Format.Sprint(r.Args); err != nil {
			return err
		}
		r.Text, err = s.shell(r.Command)
	case codegen.ActCat:
		r.Kind, r.Args = RecCat, s.decodeArgs(a, body)
		if r.Command, err = a.Format.Sprint(r.Args); err != nil {
			return err
		}
		r.Text, err = s.readCat(r.Command)
	case codegen.ActPrintMap:
		r.Kind = RecPrintMap
		r.Map, err = s.readMap(a.Map, s.dec)
	case codegen.ActPrintValue:
		r.Kind = RecPrint
		r.Args = []output.Value{s.dec.value(a.Args.Elems[0], body[a.Args.Offsets[0]:], asValue)}
	case codegen.ActClear:
		return s.clearMap(a.Map, false)
	case codegen.ActZero:
		return s.clearMap(a.Map, true)
	case codegen.ActWatch:
		return s.setWatch(a, body)
	case codegen.ActUnwatch:
		return s.unwatch(a, body)
	case codegen.ActExit:
		r.Kind = RecExit
		s.exit(a, body)
		r.Code = s.exitCode
	case codegen.ActCore:
		r.Kind, r.Command = RecSystem, "core "+a.Text
		r.Text, err = s.dumpCore(a, body)
	case codegen.ActTime:
		r.Kind = RecTime
		r.Text, err = output.Strftime(a.Text, time.Now())
	case codegen.ActJoin:
		r.Kind = RecJoin
		for i := 0; i < a.JoinArgs; i++ {
			e := cstring(body[i*a.JoinLen : (i+1)*a.JoinLen])
			if e == "" {
				break
			}
			r.Elems = append(r.Elems, e)
		}
	}
	if err != nil {
		return err
	}
	return s.opts.Records(r)
}

// sourceName is how run-time messages name the source file name:
// bpftrace 0.26.1 names a one-liner's stdin.
func (s *Session) sourceName(name string) string {
	if s.out.Compat != compat.V017 && name == "-e" {
		return "stdin"
	}
	return name
}

// diagnostic reports errorf() and warnf() as bpftrace 0.26 does: on
// Stderr as "FILE:LINE:COL-ENDCOL: ERROR: message" (or WARNING, which
// --no-warnings silences), or in JSON as an errorf or warnf record.
func (s *Session) diagnostic(a *codegen.Action, body []byte) error {
	if a.Kind == codegen.ActErrorf {
		s.errCount++
	}
	if a.Kind == codegen.ActWarnf && s.opts.NoWarnings {
		return nil
	}
	msg, err := a.Format.Sprint(s.decodeArgs(a, body))
	if err != nil {
		return err
	}
	pos, end := s.out.File.Position(a.Pos), s.out.File.Position(a.End)
	file, line, col, endCol := s.sourceName(pos.Filename), pos.Line, pos.Column, end.Column
	if o := a.Origin; o != nil {
		file, line, col, endCol = o.File, o.Line, o.Col, o.EndCol
	}
	if s.jsonDiagnostics() {
		typ := "errorf"
		if a.Kind == codegen.ActWarnf {
			typ = "warnf"
		}
		_, err := fmt.Fprintf(s.buf, `{"type": "%s", "msg": %s, "filename": %s, "line": %d, "col": %d}`+"\n",
			typ, jsonString(msg), jsonString(file), line, col)
		return err
	}
	level := "ERROR"
	if a.Kind == codegen.ActWarnf {
		level = "WARNING"
	}
	s.buf.Flush()
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d-%d: %s: %s\n", file, line, col, endCol, level, strings.TrimSuffix(msg, "\n"))
	if a.Origin == nil {
		// A call in a macro names each call it was expanded from,
		// with its line and the call marked.
		f := s.out.File
		for call, end, ok := f.ExpandedFrom(a.Pos); ok; call, end, ok = f.ExpandedFrom(call) {
			p, src := f.Locate(call)
			e, _ := f.Locate(end)
			fmt.Fprintf(&b, "%s:%d:%d-%d: %s: expanded from\n", s.sourceName(p.Filename), p.Line, p.Column, e.Column, level)
			writeMarked(&b, src, p.Column, e.Column)
		}
	}
	_, err = io.WriteString(s.diagnostics(), b.String())
	return err
}

// runtimeWarning reports what went wrong at run time at a's expression,
// as bpftrace 0.26.1 reports its runtime errors: a located warning with
// the expression marked, or in JSON a runtime_error record.
func (s *Session) runtimeWarning(a *codegen.Action, msg string) error {
	if s.opts.NoWarnings {
		return nil
	}
	p, src := s.out.File.Locate(a.Pos)
	file := s.sourceName(p.Filename)
	if s.jsonDiagnostics() {
		_, err := fmt.Fprintf(s.buf, `{"type": "runtime_error", "msg": %s, "filename": %s, "line": %d, "col": %d}`+"\n",
			jsonString(msg), jsonString(file), p.Line, p.Column)
		return err
	}
	s.buf.Flush()
	e, _ := s.out.File.Locate(a.End)
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d-%d: WARNING: %s\n", file, p.Line, p.Column, e.Column, msg)
	writeMarked(&b, src, p.Column, e.Column)
	_, err := io.WriteString(s.diagnostics(), b.String())
	return err
}

// writeMarked writes a source line and under it a line of ~ marking
// columns [from, to), tabs widened to four columns as bpftrace widens
// them.
func writeMarked(b *strings.Builder, line string, from, to int) {
	var mark strings.Builder
	for i := 0; i < len(line) && i < to-1; i++ {
		c := byte(' ')
		if i >= from-1 {
			c = '~'
		}
		n := 1
		if line[i] == '\t' {
			n = 4
		}
		for range n {
			mark.WriteByte(c)
		}
	}
	b.WriteString(strings.ReplaceAll(line, "\t", "    "))
	b.WriteByte('\n')
	b.WriteString(mark.String())
	b.WriteByte('\n')
}

// jsonDiagnostics reports whether errorf(), warnf() and failed helpers
// are reported as JSON records in the output, rather than as text.
func (s *Session) jsonDiagnostics() bool {
	return s.opts.Format == JSON && s.captured == nil
}

// diagnostics is where errorf(), warnf() and failed helpers are reported
// in text: standard error, or while a test or bench runs, with what it
// prints.
func (s *Session) diagnostics() io.Writer {
	if s.captured != nil {
		return s.captured
	}
	return s.opts.Stderr
}

// jsonString quotes s as a JSON string, leaving <, > and & as they are.
func jsonString(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
