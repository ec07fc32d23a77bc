package check

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

// Config says what the checker may assume and allow.
type Config struct {
	Resolver Resolver
	// Params are the positional parameters $1, $2, …
	Params []string
	// Unsafe allows functions that change the system: system, signal,
	// override.
	Unsafe bool
	// Kernel answers questions about kernel types and symbols; nil
	// where the kernel has no BTF.
	Kernel Kernel
	// Cpid is set when a command runs under -c, which gives cpid a value.
	Cpid bool
	// StrLen is the size of str() results and other strings whose size
	// the program does not fix; 0 means DefaultStrLen.
	StrLen int
	// Warn, if set, receives the check's warnings, in source order,
	// whether or not the check then fails: attach points left out
	// because they name nothing here (see ErrNoTarget), targets found
	// elsewhere than named (Target.Warning) or named twice, kernel
	// fields read under a name a later release gave them. Each one's
	// Severity is syntax.SeverityWarning.
	Warn func(*syntax.Error)
	// Compat is the bpftrace release whose meaning the program has.
	Compat compat.Version
	// MissingProbes is bpftrace 0.26.1's missing_probes: what an attach
	// point that names nothing does in a probe whose other points
	// resolve. "error" fails the check, "ignore" leaves it out quietly,
	// and "warn" or "" leaves it out with a warning.
	MissingProbes string
	// StackMode is how kstack and ustack print when their call does not
	// say: "bpftrace" (or ""), "perf", "raw" or "build_id".
	StackMode string
	// NoTSeries refuses tseries(), as bpftrace 0.26.1's
	// unstable_tseries=error does.
	NoTSeries bool
	// Typeinfo allows typeinfo(), which bpftrace 0.26.1 refuses unless
	// unstable_typeinfo is enable or warn.
	Typeinfo bool
}

// Kernel describes the running kernel's types and symbols, for casts,
// sizeof, offsetof, curtask and kaddr.
type Kernel interface {
	// Type looks up struct, union or enum NAME (kind STRUCT, UNION, ENUM)
	// or a typedef (kind IDENT).
	Type(kind syntax.Token, name string) (*Type, error)
	// Symbol returns a kernel symbol's address.
	Symbol(name string) (uint64, error)
	// Enum returns the value of a kernel enum constant.
	Enum(name string) (int64, bool)
	// Kfunc reports whether the kernel's BTF describes function name.
	Kfunc(name string) bool
	// KfuncAllowed reports whether programs of the probe type provider
	// may call kernel function name, as the verifier answers.
	KfuncAllowed(name, provider string) bool
	// PercpuVar returns the BTF id of the per-CPU kernel variable name.
	PercpuVar(name string) (uint32, error)
}

// MaxStrLen bounds the size of strings, where bpftrace 0.26 sets none.
// Strings larger than the BPF stack allows live in a program's scratch
// memory, which holds 64 KiB once it is a CPU's slice of an array (a
// per-CPU map value holds 32 KiB): one string may take it whole, and a
// program that needs more for all its values together is refused where
// it is generated.
const MaxStrLen = 64 << 10

// DefaultStrLen is the size of strings when nothing sets it, in the
// mode of bpftrace release v: 0.26.1's max_strlen is 1024, 0.17's 64.
func DefaultStrLen(v compat.Version) int {
	if v == compat.V017 {
		return 64
	}
	return 1024
}

// maxPasses bounds the passes that settle map types: a map used before
// the statement that fixes its type needs a second pass.
const maxPasses = 4

// Check type-checks prog. The returned error, if any, is a
// syntax.ErrorList whose entries point into the source.
func Check(prog *syntax.Program, conf *Config) (*Program, error) {
	if conf.StrLen == 0 {
		conf.StrLen = DefaultStrLen(conf.Compat)
	}
	c := &checker{conf: conf, file: prog.File, prog: &Program{Syntax: prog, Params: conf.Params, Compat: conf.Compat, StrLen: conf.StrLen, mapIndex: map[string]*Map{}}}
	defer c.warned()
	if conf.StrLen < 1 || conf.StrLen > MaxStrLen {
		c.errs.Add(c.file, syntax.NoPos, syntax.NoPos, "string length %d is out of range 1..%d", conf.StrLen, MaxStrLen)
		return nil, c.errs
	}
	if conf.Compat == compat.V017 && refuseAnonymousEnums(c, prog) {
		return nil, c.errs
	}
	// Broken declarations and attach points do not stop the check, as
	// go/types goes on past an error: what depends on a broken
	// declaration fails quietly (see declared.broken), and a probe none
	// of whose attach points resolved is left out. When that probe
	// assigns a map the others use, their view of the map would be
	// wrong, and the check stops there.
	c.declare(prog)
	units, skipped := c.resolve(prog)
	if feedsOthers(skipped, units) {
		c.errs.Sort()
		return nil, c.errs
	}
	early, earlyWarnings := c.errs, c.warnings
	c.assigned = assignedMaps(prog)
	// Map types settle over passes; only the last pass reports errors.
	// A map read before any pass has typed it is left untyped; when the
	// passes stop making progress with such a map still untyped (it is
	// only assigned values computed from itself), it is taken to hold
	// int64, as bpftrace does, and the passes go on.
	for pass := 0; ; pass++ {
		c.changed, c.pending, c.pendingAt = false, false, nil
		c.errs = slices.Clone(early)
		c.warnings = slices.Clone(earlyWarnings)
		c.prog.Probes = c.prog.Probes[:0]
		for _, u := range units {
			c.checkProbe(u)
		}
		if !c.changed && !c.pending {
			break
		}
		if pass == maxPasses-1 {
			c.unresolved()
			break
		}
		if !c.changed {
			c.defaultInts = true
		}
	}
	c.mapDecls(prog)
	if len(c.errs) > 0 {
		c.errs.Sort()
		return nil, once(c.errs)
	}
	return c.prog, nil
}

// once drops the repeats of an error at the same place: a probe whose
// attach points differ in their args layout is checked once per layout,
// and a mistake that does not depend on the layout is found in each.
// An error whose text names the layout stays, once per layout.
func once(errs syntax.ErrorList) syntax.ErrorList {
	type key struct {
		file     *syntax.File
		pos, end syntax.Pos
		msg      string
	}
	seen := map[key]bool{}
	return slices.DeleteFunc(errs, func(e *syntax.Error) bool {
		k := key{e.File, e.Pos, e.End, e.Msg}
		dup := seen[k]
		seen[k] = true
		return dup
	})
}

type checker struct {
	conf    *Config
	file    *syntax.File
	prog    *Program
	errs    syntax.ErrorList
	changed bool // a map's type changed during this pass
	pending bool // a map assigned somewhere was read before it had a type
	// defaultInts types such maps int64 when they are read.
	defaultInts bool
	// pendingAt holds the reads of untyped maps in this pass.
	pendingAt []*syntax.MapExpr
	// assigned names the maps the program assigns somewhere.
	assigned map[string]bool
	// warnings wait for Config.Warn until the check ends.
	warnings syntax.ErrorList
	// vars keeps variable types across passes, widened by every
	// assignment seen.
	vars map[varKey]map[string]*Type
	// decls holds the program's C declarations.
	decls declared
	// named holds the attach point of each test and bench probe, by
	// its full name, which must be unique.
	named map[string]*syntax.AttachPoint

	// per probe
	probe  *Probe
	inLoop int
	// failedVars names the variables whose first assignment had an
	// error, so that their uses do not report it again.
	failedVars map[string]bool
	// bareLets names the variables of this probe declared by let $x;
	// with neither type nor value, which read as zero of the type a
	// later assignment gives them.
	bareLets map[string]bool
	// kept names the variables an if/else chain assigns in every branch,
	// which stay in reach after it (see ifStmt), and whether a read of
	// each was warned about.
	kept map[string]bool
	// seen holds the expressions checked so far, so that a call that
	// fails can check the arguments it did not get to.
	seen map[syntax.Expr]bool
	// scopes holds the variables each enclosing block declares.
	scopes []map[string]bool
}

func (c *checker) errorf(n syntax.Node, format string, args ...any) {
	c.errs.Add(c.file, n.Pos(), n.End(), format, args...)
}

// boolType is the type of a truth value: bool in bpftrace 0.26, an
// int64 0 or 1 in 0.17.
func (c *checker) boolType() *Type {
	if c.conf.Compat == compat.V017 {
		return TInt64
	}
	return TBool
}

// warnf records a warning at n, written as compilers write one.
func (c *checker) warnf(n syntax.Node, format string, args ...any) {
	c.warnings.Warn(c.file, n.Pos(), n.End(), format, args...)
}

// warned hands the warnings to Config.Warn in source order, those of
// resolving the attach points and of the last pass over the probes,
// whether or not the check then fails.
func (c *checker) warned() {
	if c.conf.Warn == nil {
		return
	}
	c.warnings.Sort()
	for _, w := range once(c.warnings) {
		c.conf.Warn(w)
	}
}

// A unit is a source probe with the targets one checked Probe covers.
type unit struct {
	probe    *syntax.Probe
	provider string
	targets  []*Target
	args     *Type
	ret      *Type
}

// resolve expands every attach point and splits probes into units. It
// returns apart the probes none of whose attach points resolved.
func (c *checker) resolve(prog *syntax.Program) (units []unit, skipped []*syntax.Probe) {
	for _, p := range prog.Probes {
		argsUse := findIdent(p, "args")
		usesArgs := argsUse != nil
		var mine []unit
		var absent []*syntax.Error
		var absentAt []string
		seen := map[targetKey]bool{}
		for _, ap := range p.Points {
			if c.conf.Compat == compat.V017 && isTestOrBench(ap.Provider) {
				// bpftrace 0.17 has neither.
				c.errs.Add(c.file, ap.Pos(), ap.Pos()+syntax.Pos(len(ap.Provider)), "unknown probe type %q", ap.Provider)
				continue
			}
			if usesArgs && c.conf.Compat == compat.Current && onBPFProgram(ap) {
				// Said before the programs are looked for, which
				// the kernel may not allow, as bpftrace says it.
				c.errorf(argsUse, "args is not available in %s:bpf probes, on running BPF programs; arg0, arg1, … read their arguments", ap.Provider)
				continue
			}
			targets, err := c.resolvePoint(ap)
			if err != nil {
				e := &syntax.Error{File: c.file, Pos: ap.Pos(), End: ap.End(), Msg: err.Error(), Err: err}
				if errors.Is(err, ErrNoTarget) {
					absent, absentAt = append(absent, e), append(absentAt, ap.Raw)
				} else {
					c.errs = append(c.errs, e)
				}
				continue
			}
			added := 0
			for _, t := range targets {
				// A function listed under two names (libpthread's
				// pthread_create is libc's), or matched by two
				// wildcards, fires once. The name alone is not the
				// place: a USDT probe may have several sites.
				key := targetKey{t.FullName(), t.Attach}
				if t.Attach != nil && !reflect.TypeOf(t.Attach).Comparable() {
					key.attach = t
				}
				if seen[key] {
					continue
				}
				seen[key] = true
				added++
				if usesArgs && t.Args == nil && t.ArgsFrom != nil {
					t.Args, t.argsErr = t.ArgsFrom()
				}
				if t.Warning != "" {
					c.warnf(ap, "%s", t.Warning)
				}
				mine = addTarget(mine, p, t, usesArgs)
			}
			if added == 0 {
				c.warnf(ap, "%s names nothing the probe's earlier attach points do not; probed once", ap.Raw)
			}
		}
		switch {
		case len(mine) == 0:
			c.errs = append(c.errs, absent...)
		case len(absent) > 0 && c.conf.MissingProbes == "error":
			for _, e := range absent {
				e.Msg += "; if this is expected, set the 'missing_probes' config variable to 'warn'"
			}
			c.errs = append(c.errs, absent...)
		case c.conf.MissingProbes == "ignore":
		case len(absent) == 1:
			e := absent[0]
			e.Msg += "; left out of the probe"
			e.Severity = syntax.SeverityWarning
			c.warnings = append(c.warnings, e)
		case len(absent) > 1:
			// One warning for the probe: tools list a function under each
			// of the names it had in several releases.
			e := absent[0]
			e.Severity = syntax.SeverityWarning
			e.Msg = fmt.Sprintf("%d of the probe's %d attach points name nothing on this system and are left out: %s (the first: %s)",
				len(absent), len(p.Points), strings.Join(absentAt, ", "), e.Msg)
			c.warnings = append(c.warnings, e)
		}
		if len(mine) == 0 {
			skipped = append(skipped, p)
		}
		units = append(units, mine...)
	}
	return units, skipped
}

// targetKey tells targets apart: by name, and by the place Target.Attach
// gives, where that compares.
type targetKey struct {
	name   string
	attach any
}

// feedsOthers reports whether the skipped probes assign a map that the
// probes of units mention.
func feedsOthers(skipped []*syntax.Probe, units []unit) bool {
	assigned := map[string]bool{}
	for _, p := range skipped {
		maps.Copy(assigned, assignedMaps(p))
	}
	found := false
	for _, u := range units {
		syntax.Inspect(u.probe, func(n syntax.Node) bool {
			if m, ok := n.(*syntax.MapExpr); ok && assigned[m.Name] {
				found = true
			}
			return !found
		})
	}
	return found
}

func (c *checker) resolvePoint(ap *syntax.AttachPoint) ([]*Target, error) {
	if strings.Contains(ap.Provider, "$") {
		// A provider made of positional parameters is known now; the
		// probe's checks go by it.
		expanded, err := c.expandParams(&syntax.AttachPoint{Raw: ap.Raw, Parts: []string{ap.Provider}})
		if err != nil {
			return nil, err
		}
		name := expanded.Parts[0]
		if fields := syntax.SplitAttachPoint(name); len(fields) > 1 && len(ap.Parts) == 0 {
			// A parameter that is a whole attach point ($1 given as
			// i:ms:1) brings its own parts.
			name, ap.Parts = fields[0], fields[1:]
		}
		prov, ok := syntax.ProviderName(name)
		if !ok {
			return nil, fmt.Errorf("unknown probe type %q (%s)", name, ap.Provider)
		}
		ap.Provider = prov
	}
	switch ap.Provider {
	case "BEGIN", "END":
		if len(ap.Parts) > 0 {
			return nil, fmt.Errorf("%s takes no arguments", ap.Provider)
		}
		t := &Target{Provider: ap.Provider}
		if c.conf.Compat != compat.V017 {
			t.Label = strings.ToLower(ap.Provider)
		}
		return []*Target{t}, nil
	case "self":
		return selfTargets(ap)
	case "test", "bench":
		return c.namedTargets(ap)
	}
	if c.conf.Resolver == nil {
		return nil, fmt.Errorf("no resolver for %s probes", ap.Provider)
	}
	expanded, err := c.expandParams(ap)
	if err != nil {
		return nil, err
	}
	targets, err := c.conf.Resolver.Resolve(expanded)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, NoTarget(&ListError{Err: fmt.Errorf("%s matches nothing", expanded.Raw), Pattern: expanded.Raw, Listed: "what exists"})
	}
	for _, t := range targets {
		t.Point = ap
	}
	if c.conf.Compat != compat.V017 {
		// bpftrace 0.25 removed these; kinst keeps them, as the syntax
		// means nothing else.
		switch {
		case ap.Provider == "asyncwatchpoint":
			c.warnf(ap, "asyncwatchpoint was removed in bpftrace 0.25, which refuses it; kinst still sets it")
		case ap.Provider == "watchpoint" && targets[0].Watch != nil:
			c.warnf(ap, "a watchpoint on a function's argument was removed in bpftrace 0.25, which refuses it; kinst still sets it")
		}
	}
	return targets, nil
}

// addTarget puts t into the unit it shares a context with, or a new one.
func addTarget(units []unit, p *syntax.Probe, t *Target, usesArgs bool) []unit {
	for i := range units {
		u := &units[i]
		if u.provider != t.Provider || isTestOrBench(t.Provider) {
			// Each test and bench probe runs, and reports, on its own.
			continue
		}
		if usesArgs && !sameContext(u.targets[0], t) {
			continue
		}
		u.targets = append(u.targets, t)
		return units
	}
	return append(units, unit{probe: p, provider: t.Provider, targets: []*Target{t}, args: t.Args, ret: t.Ret})
}

// sameContext reports whether two targets lay out args and retval alike.
func sameContext(a, b *Target) bool {
	if (a.Args == nil) != (b.Args == nil) || (a.Ret == nil) != (b.Ret == nil) {
		return false
	}
	if a.Ret != nil && !a.Ret.Equal(b.Ret) {
		return false
	}
	if a.Args == nil {
		return true
	}
	if len(a.Args.Fields) != len(b.Args.Fields) {
		return false
	}
	for i, f := range a.Args.Fields {
		f.resolve()
		g := b.Args.Fields[i].resolve()
		if f.Name != g.Name || f.Offset != g.Offset || !f.Type.Equal(g.Type) || f.DataLoc != g.DataLoc {
			return false
		}
	}
	return true
}

// unresolved reports the maps still without a type after the last pass.
func (c *checker) unresolved() {
	for _, x := range c.pendingAt {
		c.errorf(x, "the type of @%s cannot be worked out", x.Name)
	}
}

// assignedMaps names the maps a program or probe assigns or increments.
func assignedMaps(n syntax.Node) map[string]bool {
	names := map[string]bool{}
	syntax.Inspect(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.AssignStmt:
			if m, ok := n.Lhs.(*syntax.MapExpr); ok {
				names[m.Name] = true
			}
		case *syntax.IncDecExpr:
			if m, ok := n.X.(*syntax.MapExpr); ok {
				names[m.Name] = true
			}
		}
		return true
	})
	return names
}

// findIdent returns the probe's first mention of the builtin name, nil
// for none.
func findIdent(p *syntax.Probe, name string) *syntax.Ident {
	var found *syntax.Ident
	syntax.Inspect(p, func(n syntax.Node) bool {
		if id, ok := n.(*syntax.Ident); ok && id.Name == name {
			found = id
		}
		return found == nil
	})
	return found
}

// onBPFProgram reports whether ap is fentry:bpf:… or fexit:bpf:…, which
// bpftrace 0.26.1 reads as the functions of running BPF programs.
func onBPFProgram(ap *syntax.AttachPoint) bool {
	return (ap.Provider == "fentry" || ap.Provider == "fexit") && len(ap.Parts) > 1 && ap.Parts[0] == "bpf"
}

func (c *checker) checkProbe(u unit) {
	p := &Probe{
		Syntax:   u.probe,
		Provider: u.provider,
		Targets:  u.targets,
		Args:     u.args,
		Ret:      u.ret,
		Types:    map[syntax.Expr]*Type{},
		Consts:   map[syntax.Expr]Const{},
		Vars:     map[string]*Var{},
		Calls:    map[*syntax.CallExpr]*Call{},
		Expand:   map[syntax.Expr]syntax.Expr{},
		Uses:     map[string]bool{},
	}
	c.probe = p
	c.failedVars = map[string]bool{}
	c.bareLets = map[string]bool{}
	c.kept = map[string]bool{}
	c.seen = map[syntax.Expr]bool{}
	c.scopes = nil
	c.pushScope()
	if u.probe.Pred != nil {
		t := c.expr(u.probe.Pred)
		if t != nil && !t.IsInt() {
			c.errorf(u.probe.Pred, "predicate must be an integer, not %s", t)
		}
	}
	c.block(u.probe.Body)
	c.prog.Probes = append(c.prog.Probes, p)
}

// block checks b in a scope of its own and returns the variables b
// declares, in the default mode.
func (c *checker) block(b *syntax.Block) map[string]bool {
	c.pushScope()
	for i, s := range b.Stmts {
		c.stmt(s)
		if i+1 < len(b.Stmts) && leaves(s) && c.conf.Compat != compat.V017 {
			// Nothing runs what follows, as bpftrace 0.26.1 warns.
			c.warnf(b.Stmts[i+1], "unreachable statement")
		}
	}
	return c.popScope()
}

// leaves reports whether s always leaves the statements after it in its
// block: a jump or an exit().
func leaves(s syntax.Stmt) bool {
	switch s := s.(type) {
	case *syntax.JumpStmt:
		return true
	case *syntax.ExprStmt:
		call, ok := s.X.(*syntax.CallExpr)
		return ok && call.Fun.Name == "exit"
	}
	return false
}

func (c *checker) stmt(s syntax.Stmt) {
	switch s := s.(type) {
	case *syntax.ExprStmt:
		c.exprStmt(s.X)
	case *syntax.AssignStmt:
		c.assign(s)
	case *syntax.IfStmt:
		if taken, ok := c.comptimeIf(s); ok {
			if taken != nil {
				c.stmt(taken)
			}
			return
		}
		c.ifStmt(s)
	case *syntax.UnrollStmt:
		t := c.expr(s.Count)
		v, ok := c.probe.Consts[s.Count]
		switch {
		case t == nil:
		case !ok || v.IsStr:
			c.errorf(s.Count, "unroll count must be a constant integer")
		case int64(v.Int) < 1:
			c.errorf(s.Count, "unroll minimum value is 1 (not %d)", int64(v.Int))
		case v.Int > 100:
			c.errorf(s.Count, "unroll maximum value is 100 (not %d)", int64(v.Int))
		}
		c.block(s.Body)
	case *syntax.WhileStmt:
		c.cond(s.Cond, "while condition")
		c.inLoop++
		c.block(s.Body)
		c.inLoop--
	case *syntax.ForStmt:
		// The loop's variable lives in the loop.
		c.pushScope()
		if c.blockScoped() && c.visible(s.Var.Name) {
			c.errorf(s.Var, "Loop declaration shadows existing variable: $%s", s.Var.Name)
		} else {
			c.loopVarApart(s)
			c.scopeVar(s.Var)
			c.forStmt(s)
		}
		c.popScope()
	case *syntax.LetStmt:
		c.letStmt(s)
	case *syntax.JumpStmt:
		if s.Tok != syntax.RETURN && c.inLoop == 0 {
			c.errorf(s, "%s is only allowed inside a loop", s.Tok)
		}
		switch {
		case s.X == nil:
		case c.conf.Compat == compat.V017:
			c.exprStmt(s.X)
		default:
			// A probe returns a 64-bit integer, which decides whether a
			// test passes or a bench is skipped.
			if t := c.expr(s.X); t != nil && (t.Kind != Int || t.IsBool()) {
				c.errorf(s.X, "Probe return values can only be integers. Found %s", t)
			}
		}
	case *syntax.DiscardStmt:
		c.exprStmt(s.X)
	case *syntax.Block:
		c.block(s)
	}
}

// forStmt checks for ($i : From..To): both bounds integers, evaluated
// once, and $i a variable of their common type.
func (c *checker) forStmt(s *syntax.ForStmt) {
	if s.Map != nil {
		c.forMap(s)
		return
	}
	from, to := c.expr(s.From), c.expr(s.To)
	var t *Type
	switch {
	case from == nil || to == nil:
	case !from.IsInt():
		c.errorf(s.From, "a range starts at an integer, not %s", from)
	case !to.IsInt():
		c.errorf(s.To, "a range ends at an integer, not %s", to)
	default:
		t, _ = unify(from, to)
	}
	if t != nil {
		switch v := c.probe.Vars[s.Var.Name]; {
		case v == nil:
			c.defineVar(s.Var, t)
		case !v.Type.IsInt():
			c.errorf(s.Var, "$%s holds %s values; a loop over a range makes it an integer", s.Var.Name, v.Type)
		}
		if v := c.probe.Vars[s.Var.Name]; v != nil {
			c.probe.Types[s.Var] = v.Type
		}
	}
	c.inLoop++
	c.block(s.Body)
	c.inLoop--
}

// forMap checks for ($kv : @m): $kv is the tuple (key, value) of each
// element, the key itself a tuple for a map of several keys. Of the
// aggregations, count(), sum(), min() and max() give their value over
// all the CPUs; avg(), stats(), hist() and lhist(), whose values are
// several numbers, are refused, as bpftrace 0.21 refuses them.
func (c *checker) forMap(s *syntax.ForStmt) {
	// The body is checked once $kv has a type, so that a mistake in the
	// loop's head is not reported again at each use of $kv.
	m := c.prog.mapIndex[s.Map.Name]
	switch {
	case m == nil && c.assigned[s.Map.Name]:
		c.pending = true
		c.pendingAt = append(c.pendingAt, s.Map)
		return
	case m == nil:
		c.errorf(s.Map, "map @%s is read but never assigned", s.Map.Name)
		return
	case m.Value.IsAggregation() && m.Value.Kind != Count && m.Value.Kind != Sum && m.Value.Kind != Min && m.Value.Kind != Max:
		c.errorf(s.Map, "@%s holds %s() values; a loop over a map reads count(), sum(), min() and max() values, not these", s.Map.Name, m.Value)
		return
	}
	value := m.Value
	switch value.Kind {
	case Count:
		value = TUint64 // the total over the CPUs
	case Sum, Min, Max:
		value = &Type{Kind: Int, Size: 8, Signed: value.Signed}
	default:
		m.Read = true
	}
	key := TUint64 // a map without keys stores its one element at key 0
	switch {
	case len(m.Keys) == 1:
		key = m.Keys[0]
	case len(m.Keys) > 1:
		key = m.Key
	}
	t := TupleType([]*Type{key, value})
	switch v := c.probe.Vars[s.Var.Name]; {
	case v == nil:
		c.defineVar(s.Var, t)
	case !v.Type.Equal(t):
		c.errorf(s.Var, "$%s holds %s values; a loop over @%s makes it %s", s.Var.Name, v.Type, s.Map.Name, t)
		return
	}
	c.probe.Types[s.Var] = c.probe.Vars[s.Var.Name].Type
	c.inLoop++
	c.block(s.Body)
	c.inLoop--
}

func (c *checker) cond(x syntax.Expr, what string) {
	t := c.expr(x)
	if t != nil && !t.IsInt() {
		c.errorf(x, "%s must be an integer, not %s", what, t)
	}
}

// exprStmt checks an expression used as a statement. As in bpftrace,
// any expression is one (args->rqtp->tv_sec; reads nothing anyone sees),
// and a ternary's branches are statements themselves, so that they may
// be calls without a value.
func (c *checker) exprStmt(x syntax.Expr) {
	switch x := x.(type) {
	case *syntax.CallExpr:
		if t := c.call(x, true); t != nil {
			c.probe.Types[x] = t
		}
	case *syntax.IncDecExpr:
		c.expr(x)
	case *syntax.CondExpr:
		if x.X == nil || !c.ifValueAllowed(x) {
			c.expr(x)
			return
		}
		c.cond(x.Cond, "condition")
		c.exprStmt(x.X)
		c.exprStmt(x.Y)
	case *syntax.BlockExpr:
		// A block used as a statement has its value used so too, as a
		// macro's x; does with a block for x: { printf("hi") }.
		c.inBlock(x, func() { c.exprStmt(x.Value) })
	default:
		if t := c.expr(x); t != nil && hasEffect(x) && !t.IsInt() {
			c.errorf(x, "a statement of type %s cannot change a variable or map: use ++ or -- on their own", t)
		}
	}
}

// hasEffect reports whether an expression changes a variable or map,
// which a statement that drops its value must still do.
func hasEffect(x syntax.Expr) bool {
	effect := false
	syntax.Inspect(x, func(n syntax.Node) bool {
		if _, ok := n.(*syntax.IncDecExpr); ok {
			effect = true
		}
		return !effect
	})
	return effect
}

// paramRef matches a positional parameter inside an attach point.
var paramRef = regexp.MustCompile(`\$[0-9]+`)

// expandParams returns ap with its positional parameters replaced by
// their text, as bpftrace does for interval:ms:$1 or uprobe:$1:main. The
// tree is left as written; a copy is made only when there is something
// to replace.
func (c *checker) expandParams(ap *syntax.AttachPoint) (*syntax.AttachPoint, error) {
	if !strings.Contains(ap.Raw, "$") {
		return ap, nil
	}
	var missing string
	expand := func(s string) string {
		return paramRef.ReplaceAllStringFunc(s, func(ref string) string {
			n, _ := strconv.Atoi(ref[1:])
			if n < 1 || n > len(c.conf.Params) {
				missing = ref
				return ref
			}
			return c.conf.Params[n-1]
		})
	}
	cp := *ap
	cp.Raw = expand(ap.Raw)
	cp.Parts = make([]string, len(ap.Parts))
	for i, part := range ap.Parts {
		cp.Parts[i] = expand(part)
	}
	if missing != "" {
		return nil, fmt.Errorf("%s uses positional parameter %s, but %d were given", ap.Raw, missing, len(c.conf.Params))
	}
	return &cp, nil
}

// param returns the text of positional parameter n, or "" when absent,
// as bpftrace does.
func (c *checker) param(n int) string {
	if n >= 1 && n <= len(c.conf.Params) {
		return c.conf.Params[n-1]
	}
	return ""
}

// paramInt parses a positional parameter as an integer; ok is false when
// the parameter is present but not a number.
func paramInt(s string) (uint64, bool) {
	if s == "" {
		return 0, true
	}
	if v, err := strconv.ParseInt(s, 0, 64); err == nil {
		return uint64(v), true
	}
	if v, err := strconv.ParseUint(s, 0, 64); err == nil {
		return v, true
	}
	return 0, false
}
