package check

import (
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

// aggregations are the functions whose results only maps can hold.
var aggregations = map[string]bool{
	"count": true, "sum": true, "avg": true, "min": true, "max": true,
	"stats": true, "hist": true, "lhist": true, "tseries": true,
}

// isAggregation reports whether name is an aggregation of the language
// checked: bpftrace 0.17 has no tseries().
func (c *checker) isAggregation(name string) bool {
	return aggregations[name] && (name != "tseries" || c.conf.Compat != compat.V017)
}

func (c *checker) assign(s *syntax.AssignStmt) {
	if b, call := AggregateBlock(s.Rhs); call != nil {
		c.inBlock(b, func() {
			c.assign(&syntax.AssignStmt{Lhs: s.Lhs, OpPos: s.OpPos, Op: s.Op, Rhs: call})
		})
		return
	}
	if call, ok := s.Rhs.(*syntax.CallExpr); ok && c.isAggregation(call.Fun.Name) {
		m, ok := s.Lhs.(*syntax.MapExpr)
		if !ok || s.Op != syntax.ASSIGN {
			c.errorf(s, "%s() can only be assigned to a map with =", call.Fun.Name)
			c.use(call.Args)
			return
		}
		c.aggregate(m, call)
		return
	}
	if v, ok := s.Lhs.(*syntax.VarExpr); ok && s.Op == syntax.ASSIGN {
		c.scopeVar(v)
	}
	var t *Type
	if s.Op == syntax.ASSIGN {
		t = c.expr(s.Rhs)
		if t == nil {
			if v, ok := s.Lhs.(*syntax.VarExpr); ok && c.probe.Vars[v.Name] == nil {
				c.failedVars[v.Name] = true
			}
			return
		}
		if !storable(t) {
			c.errorf(s.Rhs, "a %s value cannot be stored", t)
			return
		}
	} else if c.startsAtZero(s.Lhs) {
		// @x op= y on a map not yet typed starts it from zero, as an
		// integer of y's type; so does $x op= y after let $x.
		t = c.expr(s.Rhs)
		if t == nil {
			return
		}
		if t.Kind != Int {
			c.errorf(s, "invalid operation: %s on %s (operands must be integers)", s.Op, t)
			return
		}
		if c.conf.Compat == compat.V017 {
			t, _ = unify(TInt64, t)
		} else {
			// As 0 op y, 0 being a literal.
			t = c.intResult(s.Op.BinaryOf(), s.Lhs, s.Rhs, tLiteral[1], t)
		}
	} else {
		// x op= y is x = x op y on integers.
		cur := c.expr(s.Lhs)
		rt := c.expr(s.Rhs)
		if cur == nil || rt == nil {
			return
		}
		ptrStep := cur.Kind == Ptr && rt.Kind == Int && (s.Op == syntax.ADD_ASSIGN || s.Op == syntax.SUB_ASSIGN)
		if !ptrStep && (cur.Kind != Int || rt.Kind != Int) {
			c.errorf(s, "invalid operation: %s %s %s (operands must be integers)", cur, s.Op, rt)
			return
		}
		t = cur
		if !ptrStep && c.conf.Compat != compat.V017 {
			// As x = x op y in bpftrace 0.26: x widens to the result.
			t = c.intResult(s.Op.BinaryOf(), s.Lhs, s.Rhs, cur, rt)
		}
	}
	switch lhs := s.Lhs.(type) {
	case *syntax.MapExpr:
		if m := c.useMap(lhs, t, true); m != nil {
			if s.Op != syntax.ASSIGN {
				m.Read = true
			}
			c.probe.Types[lhs] = m.Value
			if s.Op == syntax.ASSIGN {
				c.signChange(s.Rhs, t, m.Value)
			}
		}
	case *syntax.VarExpr:
		v := c.probe.Vars[lhs.Name]
		if v == nil {
			v = c.defineVar(lhs, t)
		} else if v.Declared {
			switch {
			case c.fitsDeclared(v.Type, t, s.Rhs):
			case c.conf.Compat != compat.V017 && v.Type.Kind == Int && t.Kind == Int && !t.IsBool() && !isLiteral(s.Rhs):
				// bpftrace 0.26 converts an integer expression, warning;
				// only a literal out of range is an error.
				c.warnf(s.Rhs, castWarning, t, v.Type)
			default:
				c.errorf(s, "Type mismatch for $%s: a %s value does not fit its declared type %s", lhs.Name, t, v.Type)
				return
			}
		} else if u, ok := c.unify(v.Type, t); !ok {
			c.errorf(s, "$%s holds %s values; cannot assign %s", syntax.SourceName(lhs.Name), v.Type, t)
			return
		} else if u != v.Type {
			v.Type = u
			c.rememberVar(lhs.Name, u)
		}
		c.probe.Types[lhs] = v.Type
		if s.Op == syntax.ASSIGN {
			c.signChange(s.Rhs, t, v.Type)
		}
	}
}

// defineVar creates a variable at its first assignment. A type widened
// by later assignments in an earlier pass is kept, so that the first
// assignment does not narrow it again.
func (c *checker) defineVar(x *syntax.VarExpr, t *Type) *Var {
	if prev := c.varTypes()[x.Name]; prev != nil {
		if u, ok := c.unify(prev, t); ok {
			t = u
		}
	}
	v := &Var{Name: x.Name, Type: t}
	c.probe.Vars[x.Name] = v
	c.rememberVar(x.Name, t)
	return v
}

func (c *checker) varTypes() map[string]*Type {
	key := varKey{c.probe.Syntax, c.probe.Targets[0]}
	m := c.vars[key]
	if m == nil {
		m = map[string]*Type{}
		if c.vars == nil {
			c.vars = map[varKey]map[string]*Type{}
		}
		c.vars[key] = m
	}
	return m
}

func (c *checker) rememberVar(name string, t *Type) {
	m := c.varTypes()
	if prev := m[name]; prev == nil || !prev.Equal(t) || prev.Flex != t.Flex {
		if prev != nil {
			c.changed = true
		}
		m[name] = t
	}
}

// varKey names a checked probe across passes.
type varKey struct {
	probe  *syntax.Probe
	target *Target
}

// keyTypes checks a map's key expressions.
func (c *checker) keyTypes(x *syntax.MapExpr) ([]*Type, bool) {
	if x.Keys == nil {
		return nil, true
	}
	keys := make([]*Type, 0, len(x.Keys))
	for _, k := range x.Keys {
		t := c.expr(k)
		if t == nil {
			return nil, false
		}
		elems := []*Type{t}
		if t.Kind == Tuple && !t.IsRecord() {
			// A tuple key is its elements: @m[(1, "a")] is @m[1, "a"].
			// bpftrace 0.26.1 takes a tuple among several keys, and
			// tuples inside a key, as 0.17 does not.
			if len(x.Keys) > 1 && c.conf.Compat == compat.V017 {
				c.errorf(k, "a tuple cannot be one of several keys: give its elements as keys, as in @m[a, b]")
				return nil, false
			}
			if len(x.Keys) == 1 {
				elems = t.Elems
			}
		}
		for _, t := range elems {
			nested := t.Kind == Tuple && !t.IsRecord() && c.conf.Compat == compat.V017
			if !storable(t) || t.Kind == Void || nested {
				c.errorf(k, "a %s value cannot be a map key", t)
				return nil, false
			}
			// Integer keys are all 64 bits wide so that @x[1] and @x[pid]
			// name the same element.
			switch {
			case t.Enum != nil:
				t = &Type{Kind: Int, Size: 8, Signed: t.Signed, Name: t.Name, Enum: t.Enum}
			case t.Flex:
				t = tLiteral[8]
			case t.Kind == Int && !t.IsBool():
				t = IntType(8, t.Signed)
			}
			keys = append(keys, t)
		}
	}
	return keys, true
}

// useMap records a use of map x whose elements hold values of type value
// (nil for a read), creating the map or widening its types.
func (c *checker) useMap(x *syntax.MapExpr, value *Type, write bool) *Map {
	keys, ok := c.keyTypes(x)
	if !ok {
		return nil
	}
	m := c.prog.mapIndex[x.Name]
	if m == nil {
		if value == nil {
			switch {
			case c.assigned[x.Name] && c.defaultInts:
				value = TInt64
			case c.assigned[x.Name]:
				c.pending = true
				c.pendingAt = append(c.pendingAt, x)
				return nil
			default:
				c.errorf(x, "map @%s is read but never assigned", x.Name)
				return nil
			}
		}
		m = &Map{Name: x.Name, Keys: keys, Value: value, Pos: x.Pos()}
		m.Key = keyOf(keys)
		c.prog.mapIndex[x.Name] = m
		c.prog.Maps = append(c.prog.Maps, m)
		c.changed = true
		return m
	}
	if (m.Keys == nil) != (keys == nil) || len(m.Keys) != len(keys) {
		c.errorf(x, "@%s is used with %d keys here and %d elsewhere", x.Name, len(keys), len(m.Keys))
		return nil
	}
	for i, k := range keys {
		u, ok := c.unify(m.Keys[i], k)
		if !ok {
			c.errorf(x.Keys[min(i, len(x.Keys)-1)], "key %d of @%s has type %s here and %s elsewhere", i+1, x.Name, k, m.Keys[i])
			return nil
		}
		if u != m.Keys[i] && (!u.Equal(m.Keys[i]) || u.Flex != m.Keys[i].Flex) {
			m.Keys[i] = u
			m.Key = keyOf(m.Keys)
			c.changed = true
		}
		if len(keys) == len(x.Keys) {
			// Keys are widened to 64 bits: what changes sign is the
			// key as written.
			if kt := c.probe.Types[x.Keys[i]]; kt != nil {
				c.signChange(x.Keys[i], kt, u)
			}
		}
	}
	if value == nil {
		return m
	}
	if m.Value.IsAggregation() || value.IsAggregation() {
		if m.Value.Kind == Hist && value.Kind == Hist && m.Value.HistBits != value.HistBits {
			c.errorf(x, "@%s holds hist values of bits %d; a single hist cannot mix bits %d", x.Name, m.Value.HistBits, value.HistBits)
			return nil
		}
		if !m.Value.Equal(value) {
			c.errorf(x, "@%s holds %s values; cannot assign %s", x.Name, m.Value, value)
			return nil
		}
		return m
	}
	u, ok := c.unify(m.Value, value)
	if !ok {
		c.errorf(x, "@%s holds %s values; cannot assign %s", x.Name, m.Value, value)
		return nil
	}
	if !u.Equal(m.Value) || u.Flex != m.Value.Flex {
		m.Value = u
		c.changed = true
	}
	return m
}

// keyOf lays out a map's key: a tuple of its key types.
func keyOf(keys []*Type) *Type {
	if keys == nil {
		return nil
	}
	return TupleType(keys)
}

// mapRead types a map element used as a value.
func (c *checker) mapRead(x *syntax.MapExpr) *Type {
	m := c.useMap(x, nil, false)
	if m == nil {
		return nil
	}
	if m.Value.IsAggregation() {
		switch m.Value.Kind {
		case Count, Sum, Min, Max, Avg:
			if c.conf.Compat != compat.V017 {
				// bpftrace 0.26 reads them as integers: the value
				// over all CPUs.
				m.Read = true
				return IntType(8, m.Value.Signed)
			}
		}
		c.errorf(x, "@%s holds %s() values, which can only be printed, not read", x.Name, m.Value)
		return nil
	}
	m.Read = true
	return m.Value
}

// aggregate checks @m[k] = count() and friends.
func (c *checker) aggregate(x *syntax.MapExpr, call *syntax.CallExpr) {
	// A mistake stops the checks below; the arguments and keys they did
	// not reach are checked all the same, for mistakes of their own.
	defer func() {
		c.use(call.Args)
		c.use(x.Keys)
	}()
	name := call.Fun.Name
	want := map[string]int{"count": 0, "sum": 1, "avg": 1, "min": 1, "max": 1, "stats": 1, "hist": 1, "lhist": 4, "tseries": 3}[name]
	// bpftrace 0.26 gives hist() a second argument, the bits that
	// split each power of two into finer buckets.
	fineHist := name == "hist" && c.conf.Compat != compat.V017
	switch {
	case name == "tseries" && len(call.Args) != 3 && len(call.Args) != 4:
		c.errorf(call, "tseries() takes 3 or 4 arguments, not %d", len(call.Args))
		return
	case fineHist && len(call.Args) != 1 && len(call.Args) != 2:
		c.errorf(call, "hist() takes 1 or 2 arguments, not %d", len(call.Args))
		return
	case name != "tseries" && !fineHist && len(call.Args) != want:
		c.errorf(call, "%s() takes %d argument%s, not %d", name, want, plural(want), len(call.Args))
		return
	}
	var value *Type
	signed := false
	if want > 0 {
		t := c.expr(call.Args[0])
		if t == nil {
			return
		}
		if t.Kind != Int {
			c.errorf(call.Args[0], "%s() needs an integer, not %s", name, t)
			return
		}
		signed = t.Signed
	}
	switch name {
	case "count":
		value = TCount
	case "sum":
		value = &Type{Kind: Sum, Size: 8, Signed: signed}
	case "min":
		value = &Type{Kind: Min, Size: 16, Signed: signed}
	case "max":
		value = &Type{Kind: Max, Size: 16, Signed: signed}
	case "avg":
		value = &Type{Kind: Avg, Size: 16, Signed: signed}
	case "stats":
		value = &Type{Kind: Stats, Size: 16, Signed: signed}
	case "hist":
		value = &Type{Kind: Hist, Size: 8}
		if len(call.Args) == 2 {
			args, ok := c.constArgs(call, "bits")
			if !ok {
				return
			}
			if args[0] < 0 || args[0] > 5 {
				c.errorf(call.Args[1], "hist() bits %d must be 0..5", args[0])
				return
			}
			value.HistBits = int(args[0])
		}
	case "lhist":
		args, ok := c.constArgs(call, "min", "max", "step")
		if !ok {
			return
		}
		lo, hi, step := args[0], args[1], args[2]
		switch {
		case lo < 0:
			c.errorf(call.Args[1], "lhist() min must be non-negative")
			return
		case hi <= lo:
			c.errorf(call.Args[2], "lhist() max must be greater than min")
			return
		case step <= 0:
			c.errorf(call.Args[3], "lhist() step must be positive")
			return
		case (hi-lo)/step > 1000:
			c.errorf(call, "lhist() would have %d buckets; at most 1000 are allowed", (hi-lo)/step)
			return
		}
		value = &Type{Kind: Lhist, Size: 8, LhistMin: lo, LhistMax: hi, LhistStep: step}
	case "tseries":
		if c.conf.NoTSeries {
			c.errorf(call, "tseries() is an unstable feature that unstable_tseries=error turns off; enable it with unstable_tseries=enable")
			return
		}
		value = c.tseriesType(call, signed)
		if value == nil {
			return
		}
	}
	m := c.useMap(x, value, true)
	if m == nil {
		return
	}
	c.probe.Types[x] = m.Value
	c.probe.Calls[call] = &Call{Func: name, Map: m}
	c.probe.Types[call] = m.Value
}

// constArgs checks that the arguments of an aggregation after its value
// are constant integers, named as its error messages name them, and
// returns them.
func (c *checker) constArgs(call *syntax.CallExpr, names ...string) ([]int64, bool) {
	args := make([]int64, len(names))
	for i, name := range names {
		a := call.Args[i+1]
		t := c.expr(a)
		v, ok := c.probe.Consts[a]
		if t == nil {
			return nil, false
		}
		if !ok || v.IsStr {
			c.errorf(a, "%s() %s must be a constant integer", call.Fun.Name, name)
			return nil, false
		}
		args[i] = int64(v.Int)
	}
	return args, true
}

// tseriesType checks the arguments of tseries(v, interval, intervals[,
// agg]) after the value and returns the map value type they make.
func (c *checker) tseriesType(call *syntax.CallExpr, signed bool) *Type {
	args, ok := c.constArgs(call, "interval", "num_intervals")
	if !ok {
		return nil
	}
	switch interval, n := args[0], args[1]; {
	case interval < 1:
		c.errorf(call.Args[1], "tseries() interval must be at least 1ns, not %d", interval)
		return nil
	case n < 1:
		c.errorf(call.Args[2], "tseries() num_intervals must be at least 1, not %d", n)
		return nil
	case n > 1000000:
		c.errorf(call.Args[2], "tseries() num_intervals must be at most 1000000, not %d", n)
		return nil
	}
	agg := ""
	if len(call.Args) == 4 {
		a := call.Args[3]
		t := c.expr(a)
		v, ok := c.probe.Consts[a]
		if t == nil {
			return nil
		}
		if !ok || !v.IsStr {
			c.errorf(a, "tseries() aggregation function must be a constant string")
			return nil
		}
		switch v.Str {
		case "avg", "max", "min", "sum":
		default:
			c.errorf(a, "tseries() aggregation function %q is none of avg, max, min and sum", v.Str)
			return nil
		}
		agg = v.Str
	}
	return &Type{Kind: TSeries, Size: 24, Signed: signed, TSInterval: args[0], TSIntervals: args[1], TSAgg: agg}
}

// startsAtZero reports whether x is a map no statement has typed yet, or
// a variable a bare let declared and nothing has assigned yet: op=
// starts either from zero.
func (c *checker) startsAtZero(x syntax.Expr) bool {
	switch x := x.(type) {
	case *syntax.MapExpr:
		return c.prog.mapIndex[x.Name] == nil
	case *syntax.VarExpr:
		return c.probe.Vars[x.Name] == nil && c.visible(x.Name)
	}
	return false
}
