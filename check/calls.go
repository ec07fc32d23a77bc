package check

import (
	"slices"
	"sort"
	"strings"

	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/internal/spell"
	"kinst.dev/kinst/output"
	"kinst.dev/kinst/syntax"
)

// A function describes how to check calls of one builtin function.
type function struct {
	stmt   bool // only as a statement: it has no value
	unsafe bool // changes the system; needs --unsafe
	check  func(c *checker, x *syntax.CallExpr, call *Call) *Type
}

var functions map[string]*function

func init() {
	functions = map[string]*function{
		"printf":   {stmt: true, check: (*checker).checkPrintf},
		"system":   {stmt: true, unsafe: true, check: (*checker).checkPrintf},
		"cat":      {stmt: true, check: (*checker).checkPrintf},
		"errorf":   {stmt: true, check: (*checker).checkPrintf},
		"warnf":    {stmt: true, check: (*checker).checkPrintf},
		"print":    {stmt: true, check: (*checker).checkPrint},
		"time":     {stmt: true, check: (*checker).checkTime},
		"join":     {stmt: true, check: (*checker).checkJoin},
		"exit":     {stmt: true, check: (*checker).checkExit},
		"clear":    {stmt: true, check: (*checker).checkMapOp},
		"zero":     {stmt: true, check: (*checker).checkMapOp},
		"delete":   {check: (*checker).checkDelete},
		"has_key":  {check: (*checker).checkHasKey},
		"len":      {check: (*checker).checkLen},
		"signal":   {stmt: true, unsafe: true, check: (*checker).checkSignal},
		"override": {stmt: true, unsafe: true, check: (*checker).checkOverride},
		"core":     {stmt: true, unsafe: true, check: (*checker).checkCore},
		"unwatch":  {stmt: true, check: (*checker).checkUnwatch},
		"str":      {check: (*checker).checkStr},
		"buf":      {check: (*checker).checkBuf},
		"strncmp":  {check: (*checker).checkStrncmp},
		"ksym":     {check: (*checker).checkSym},
		"usym":     {check: (*checker).checkSym},
		"kaddr":    {check: (*checker).checkKaddr},
		"ntop":     {check: (*checker).checkNtop},
		"reg":      {check: (*checker).checkReg},
		"kstack":   {check: (*checker).checkStack},
		"ustack":   {check: (*checker).checkStack},
		"kptr":     {check: (*checker).checkPtrSpace},
		"uptr":     {check: (*checker).checkPtrSpace},

		"strftime":    {check: (*checker).checkStrftime},
		"strerror":    {check: (*checker).checkStrerror},
		"macaddr":     {check: (*checker).checkMacaddr},
		"cgroup_path": {check: (*checker).checkCgroupPath},
		"cgroupid":    {check: (*checker).checkCgroupid},
		"pton":        {check: (*checker).checkPton},
		"strcontains": {check: (*checker).checkStrcontains},
		"bswap":       {check: (*checker).checkBswap},
		"path":        {check: (*checker).checkPath},
		"uaddr":       {check: (*checker).checkUaddr},
		"skboutput":   {check: (*checker).checkSkbOutput},

		"comm":         {check: (*checker).checkComm},
		"ppid":         {check: (*checker).checkTaskField},
		"pcomm":        {check: (*checker).checkTaskField},
		"leader_tid":   {check: (*checker).checkTaskField},
		"leader_comm":  {check: (*checker).checkTaskField},
		"pid":          {check: (*checker).checkPidNs},
		"tid":          {check: (*checker).checkPidNs},
		"nsecs":        {check: (*checker).checkNsecs},
		"is_err":       {check: (*checker).checkIsErr},
		"syscall_name": {check: (*checker).checkNamed},
		"signal_name":  {check: (*checker).checkNamed},

		"strlen":              {check: (*checker).checkStrlen},
		"strcap":              {check: (*checker).checkStrcap},
		"strstr":              {check: (*checker).checkStrstr},
		"default_str_length":  {check: (*checker).checkDefaultStrLen},
		"is_str":              {check: (*checker).checkIsKind},
		"is_ptr":              {check: (*checker).checkIsKind},
		"is_array":            {check: (*checker).checkIsKind},
		"is_integer":          {check: (*checker).checkIsKind},
		"is_unsigned_integer": {check: (*checker).checkIsKind},
		"is_literal":          {check: (*checker).checkIsLiteral},
		"typeinfo":            {check: (*checker).checkTypeinfo},
		"fail":                {stmt: true, check: (*checker).checkFail},
		"static_assert":       {stmt: true, check: (*checker).checkStaticAssert},
		"assert":              {stmt: true, check: (*checker).checkAssert},
		"has_cpid":            {check: (*checker).checkHasCpid},
		"signal_thread":       {stmt: true, unsafe: true, check: (*checker).checkSignal},
		"write_user":          {unsafe: true, check: (*checker).checkWriteUser},
		"memcmp":              {check: (*checker).checkMemcmp},
		"assert_str":          {stmt: true, check: (*checker).checkAssertStr},
		"find":                {check: (*checker).checkFind},
		"kfunc_exist":         {check: (*checker).checkKfunc},
		"kfunc_allowed":       {check: (*checker).checkKfunc},
		"socket_cookie":       {check: (*checker).checkSocketCookie},
		"percpu_kaddr":        {check: (*checker).checkPercpuKaddr},
	}
}

func functionNames() []string {
	names := Functions()
	for n := range aggregations {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// call checks a function call; stmt says whether it stands as a
// statement, where functions without a value are allowed.
func (c *checker) call(x *syntax.CallExpr, stmt bool) *Type {
	name := x.Fun.Name
	if c.isAggregation(name) {
		c.errorf(x, "%s() must be assigned to a map, as in @x = %s(…)", name, name)
		c.use(x.Args)
		return nil
	}
	f := functions[name]
	if f == nil && len(x.Args) > 0 && slices.Contains(builtinNames, name) {
		c.errorf(x, "%s() takes no arguments", name)
		c.use(x.Args)
		return nil
	}
	if f == nil && slices.Contains(builtinNames, name) {
		// Every builtin variable may be called: pid() is pid.
		id := &syntax.Ident{NamePos: x.Fun.NamePos, Name: name}
		t := c.expr(id)
		if t != nil {
			c.probe.Expand[x] = id
		}
		return t
	}
	if f == nil {
		names := functionNames()
		if c.conf.Compat == compat.V017 {
			// 0.17 has no tseries() to suggest.
			names = slices.DeleteFunc(names, func(n string) bool { return n == "tseries" })
		}
		if near := spell.Nearest(name, names); near != "" {
			c.errorf(x.Fun, "unknown function %s (did you mean %s?)", name, near)
		} else {
			c.errorf(x.Fun, "unknown function %s", name)
		}
		c.use(x.Args)
		return nil
	}
	// A call that is not allowed here is still checked, as go/types
	// checks the arguments of a call it rejects: their own mistakes
	// are reported with it.
	allowed := true
	if f.stmt && !stmt {
		c.errorf(x, "%s() has no value: use it as a statement", name)
		allowed = false
	}
	if f.unsafe && !c.conf.Unsafe {
		c.errs = append(c.errs, &syntax.Error{File: c.file, Pos: x.Fun.Pos(), End: x.Fun.End(), Msg: name + "() changes the system it runs on", Err: ErrUnsafe})
		allowed = false
	}
	call := &Call{Func: name}
	t := f.check(c, x, call)
	if t == nil {
		// The check stopped at the first mistake; the arguments it did
		// not reach may hold others.
		c.use(x.Args)
	}
	if t == nil || !allowed {
		return nil
	}
	c.probe.Calls[x] = call
	return t
}

// use checks the arguments of a call that was rejected, those not
// checked yet, so that their own mistakes are reported. Maps are left
// unread, only their keys checked: what the call would do with a map is
// unknown.
func (c *checker) use(args []syntax.Expr) {
	for _, a := range args {
		if c.seen[a] {
			continue
		}
		if m, ok := a.(*syntax.MapExpr); ok {
			c.use(m.Keys)
			continue
		}
		c.expr(a)
	}
}

func (c *checker) nargs(x *syntax.CallExpr, lo, hi int) bool {
	n := len(x.Args)
	if n >= lo && n <= hi {
		return true
	}
	switch {
	case lo == hi:
		c.errorf(x, "%s() takes %d argument%s, not %d", x.Fun.Name, lo, plural(lo), n)
	case n < lo:
		c.errorf(x, "%s() takes at least %d argument%s, not %d", x.Fun.Name, lo, plural(lo), n)
	default:
		c.errorf(x, "%s() takes at most %d argument%s, not %d", x.Fun.Name, hi, plural(hi), n)
	}
	return false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// constString returns the value of a constant string argument.
func (c *checker) constString(x syntax.Expr, what string) (string, bool) {
	if c.expr(x) == nil {
		return "", false
	}
	v, ok := c.probe.Consts[x]
	if !ok || !v.IsStr {
		c.errorf(x, "%s must be a constant string", what)
		return "", false
	}
	return v.Str, true
}

// constInt returns the value of a constant integer argument.
func (c *checker) constInt(x syntax.Expr, what string) (int64, bool) {
	t := c.expr(x)
	if t == nil {
		return 0, false
	}
	v, ok := c.probe.Consts[x]
	if !ok || v.IsStr {
		c.errorf(x, "%s must be a constant integer", what)
		return 0, false
	}
	return int64(v.Int), true
}

func (c *checker) checkPrintf(x *syntax.CallExpr, call *Call) *Type {
	if len(x.Args) == 0 {
		c.errorf(x, "%s() needs a format string", x.Fun.Name)
		return nil
	}
	text, ok := c.constString(x.Args[0], x.Fun.Name+"() format")
	// Every argument is checked, so that each bad one is reported.
	kinds := make([]output.Kind, 0, len(x.Args)-1)
	var enums []bool
	for _, a := range x.Args[1:] {
		switch t := c.expr(a); {
		case t == nil:
			ok = false
		case !storable(t):
			c.errorf(a, "%s() cannot print a %s value", x.Fun.Name, t)
			ok = false
		default:
			kinds = append(kinds, OutputKind(t))
			enums = append(enums, t.Enum != nil && c.conf.Compat != compat.V017)
		}
	}
	if !ok {
		return nil
	}
	f := output.ParseFormat(text)
	for i, v := range f.Verbs() {
		if i < len(enums) && enums[i] && v.Arg == output.ArgString {
			// bpftrace 0.26 prints an enum's value as its name
			// through %s.
			kinds[i] = output.KindString
		}
	}
	if fe := f.Check(x.Fun.Name, kinds); fe != nil {
		if fe.Offset >= 0 {
			lit := x.Args[0]
			pos := lit.Pos() + 1 + syntax.Pos(fe.Offset)
			if _, isLit := lit.(*syntax.StringLit); !isLit || pos >= lit.End() {
				pos = lit.Pos()
			}
			c.errs.Add(c.file, pos, pos+1, "%s(): %s", fe.Func, fe.Msg)
		} else {
			c.errorf(x, "%s(): %s", fe.Func, fe.Msg)
		}
		return nil
	}
	call.Format = f
	return TVoid
}

// OutputKind is how package output prints values of type t.
func OutputKind(t *Type) output.Kind {
	if t.IsBool() {
		return output.KindBool
	}
	switch t.Kind {
	case Int, Ptr:
		// Pointers print as integers everywhere but in map keys, which
		// the runtime decodes as output.Pointer itself.
		return output.KindInt
	case Str, FuncName:
		return output.KindString
	case Tuple:
		if t.Names != nil {
			return output.KindRecord
		}
		return output.KindTuple
	case Array:
		return output.KindArray
	case Record:
		return output.KindRecord
	case Buffer:
		return output.KindBuffer
	case Ksym:
		return output.KindKsym
	case Usym:
		return output.KindUsym
	case Stack:
		if t.User {
			return output.KindUstack
		}
		return output.KindKstack
	case Inet:
		return output.KindInet
	case ProbeName:
		return output.KindProbe
	case Username:
		return output.KindUsername
	case Timestamp:
		return output.KindTimestamp
	case Strerror:
		return output.KindStrerror
	case MacAddr:
		return output.KindMacAddr
	case CgroupPath:
		return output.KindCgroupPath
	case Named:
		return output.KindString
	case Count:
		return output.KindCount
	case Sum:
		return output.KindSum
	case Min:
		return output.KindMin
	case Max:
		return output.KindMax
	case Avg:
		return output.KindAvg
	case Stats:
		return output.KindStats
	case Hist:
		return output.KindHist
	case Lhist:
		return output.KindLhist
	case TSeries:
		return output.KindTSeries
	}
	return output.KindInvalid
}

func (c *checker) checkPrint(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 3) {
		return nil
	}
	if m, ok := x.Args[0].(*syntax.MapExpr); ok && m.Keys == nil {
		mm := c.prog.mapIndex[m.Name]
		if mm == nil {
			c.errorf(m, "map @%s is printed but never assigned", m.Name)
			return nil
		}
		call.Map = mm
		c.probe.Types[m] = mm.Value
		for i, a := range x.Args[1:] {
			v, ok := c.constInt(a, []string{"print() top", "print() divisor"}[i])
			if !ok {
				return nil
			}
			if v < 0 || (i == 1 && v == 0) {
				c.errorf(a, "%s must be positive", []string{"print() top", "print() divisor"}[i])
				return nil
			}
			if i == 0 {
				call.Top = uint64(v)
			} else {
				call.Div = uint64(v)
			}
		}
		return TVoid
	}
	if len(x.Args) > 1 {
		c.errorf(x.Args[1], "print() takes top and divisor only for a whole map")
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	if !storable(t) {
		c.errorf(x.Args[0], "print() cannot print a %s value", t)
		return nil
	}
	return TVoid
}

func (c *checker) checkTime(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 0, 1) {
		return nil
	}
	call.Text = "%H:%M:%S\n"
	if len(x.Args) == 1 {
		s, ok := c.constString(x.Args[0], "time() format")
		if !ok {
			return nil
		}
		call.Text = s
	}
	return TVoid
}

func (c *checker) checkJoin(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 2) {
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	if !t.IsInt() {
		c.errorf(x.Args[0], "join() needs a pointer to an array of strings, not %s", t)
		return nil
	}
	call.Text = " "
	if len(x.Args) == 2 {
		s, ok := c.constString(x.Args[1], "join() separator")
		if !ok {
			return nil
		}
		call.Text = s
	}
	call.Space = c.spaceOf(t)
	return TVoid
}

// checkExit checks exit() and exit(code), the status the command exits
// with.
func (c *checker) checkExit(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 0, 1) {
		return nil
	}
	if len(x.Args) == 1 {
		t := c.expr(x.Args[0])
		if t == nil {
			return nil
		}
		if t.Kind != Int {
			c.errorf(x.Args[0], "exit() takes an integer status, not %s", t)
			return nil
		}
	}
	return TVoid
}

// mapArg checks that an argument names a whole map.
func (c *checker) mapArg(x *syntax.CallExpr) *Map {
	m, ok := x.Args[0].(*syntax.MapExpr)
	if !ok || m.Keys != nil {
		c.errorf(x.Args[0], "%s() takes a map, as in %s(@name)", x.Fun.Name, x.Fun.Name)
		return nil
	}
	mm := c.prog.mapIndex[m.Name]
	if mm == nil {
		c.errorf(m, "map @%s is never assigned", m.Name)
		return nil
	}
	c.probe.Types[m] = mm.Value
	return mm
}

func (c *checker) checkMapOp(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	call.Map = c.mapArg(x)
	if call.Map == nil {
		return nil
	}
	return TVoid
}

// checkDelete checks delete(@m, key) and delete(@scalar), bpftrace
// 0.26's forms, and delete(@m[key]), the older one, which 0.17 also took
// for several elements at once. Its value says whether an element was
// deleted.
func (c *checker) checkDelete(x *syntax.CallExpr, call *Call) *Type {
	if len(x.Args) == 0 {
		c.nargs(x, 1, 2)
		return nil
	}
	m, ok := x.Args[0].(*syntax.MapExpr)
	if !ok {
		c.errorf(x.Args[0], "delete() takes a map and a key, as in delete(@name, key)")
		return nil
	}
	elems := []*syntax.MapExpr{m}
	switch {
	case m.Keys == nil && len(x.Args) == 2:
		if c.keyless(x, m.Name, "delete() with two arguments") {
			return nil
		}
		elems[0] = &syntax.MapExpr{NamePos: m.NamePos, Name: m.Name, Keys: []syntax.Expr{x.Args[1]}, Rbrack: x.Args[1].End()}
	case len(x.Args) > 1:
		// 0.17's delete(@a[k], @b[k]).
		for _, a := range x.Args[1:] {
			e, ok := a.(*syntax.MapExpr)
			if !ok {
				c.errorf(a, "delete() takes a map and a key, as in delete(@name, key)")
				return nil
			}
			elems = append(elems, e)
		}
		if c.conf.Compat != compat.V017 {
			c.warnf(x, "delete() of several elements is bpftrace 0.17's form: delete them one by one, as in delete(@name, key)")
		}
	}
	for _, e := range elems {
		mm := c.useMap(e, nil, false)
		if mm == nil {
			return nil
		}
		c.probe.Types[e] = mm.Value
		call.Map = mm
	}
	if elems[0] != m {
		// delete(@m, key) names @m bare.
		c.probe.Types[m] = call.Map.Value
	}
	call.Elems = elems
	return c.boolType()
}

// checkHasKey checks has_key(@m, key): whether @m holds an element at key.
func (c *checker) checkHasKey(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 2, 2) {
		return nil
	}
	m, ok := x.Args[0].(*syntax.MapExpr)
	if !ok || m.Keys != nil {
		c.errorf(x.Args[0], "has_key() takes a map and a key, as in has_key(@name, key)")
		return nil
	}
	if c.keyless(x, m.Name, "has_key()") {
		return nil
	}
	e := &syntax.MapExpr{NamePos: m.NamePos, Name: m.Name, Keys: []syntax.Expr{x.Args[1]}, Rbrack: x.Args[1].End()}
	mm := c.useMap(e, nil, false)
	if mm == nil {
		return nil
	}
	if mm.Value.Kind == Hist || mm.Value.Kind == Lhist || mm.Value.Kind == TSeries {
		c.errorf(e, "has_key() cannot look into a %s() map", mm.Value)
		return nil
	}
	c.probe.Types[m] = mm.Value
	c.probe.Types[e] = mm.Value
	call.Map = mm
	call.Elems = []*syntax.MapExpr{e}
	return c.boolType()
}

// keyless reports, as an error at call x, a map without keys where x
// needs one with keys: bpftrace refuses to count or search a map of
// one element. what names the call as bpftrace's message does.
func (c *checker) keyless(x *syntax.CallExpr, name, what string) bool {
	if m := c.prog.mapIndex[name]; m != nil && m.Keys == nil {
		c.errorf(x, "call to %s expects a map with explicit keys (non-scalar map)", what)
		return true
	}
	return false
}

// checkLen checks len(@m), the number of elements of @m, and
// len(kstack), len(ustack), the number of frames of a stack.
func (c *checker) checkLen(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	if _, ok := x.Args[0].(*syntax.MapExpr); !ok {
		t := c.expr(x.Args[0])
		if t == nil {
			return nil
		}
		if t.Kind != Stack {
			c.errorf(x.Args[0], "len() takes a map or a stack, not %s", t)
			return nil
		}
		return TInt64
	}
	call.Map = c.mapArg(x)
	if call.Map == nil {
		return nil
	}
	if call.Map.Value.Kind == Hist || call.Map.Value.Kind == Lhist || call.Map.Value.Kind == TSeries {
		c.errorf(x.Args[0], "len() cannot count the elements of a %s() map", call.Map.Value)
		return nil
	}
	if c.keyless(x, call.Map.Name, "len()") {
		return nil
	}
	return TInt64
}

// signals are the names signal() accepts.
var signals = map[string]int64{
	"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGILL": 4, "SIGTRAP": 5, "SIGABRT": 6,
	"SIGBUS": 7, "SIGFPE": 8, "SIGKILL": 9, "SIGUSR1": 10, "SIGSEGV": 11, "SIGUSR2": 12,
	"SIGPIPE": 13, "SIGALRM": 14, "SIGTERM": 15, "SIGCHLD": 17, "SIGCONT": 18,
	"SIGSTOP": 19, "SIGTSTP": 20, "SIGTTIN": 21, "SIGTTOU": 22, "SIGURG": 23,
	"SIGXCPU": 24, "SIGXFSZ": 25, "SIGVTALRM": 26, "SIGPROF": 27, "SIGWINCH": 28,
	"SIGIO": 29, "SIGPWR": 30, "SIGSYS": 31,
}

// checkSignal checks signal(sig) and signal_thread(sig), which signal
// the process or the thread that hit the probe.
func (c *checker) checkSignal(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	if runByKinst(c.probe.Provider) {
		c.errorf(x, "%s() has no process to signal in %s", x.Fun.Name, c.probe.Provider)
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	v, isConst := c.probe.Consts[x.Args[0]]
	switch {
	case isConst && v.IsStr:
		n, ok := signals[strings.ToUpper(v.Str)]
		if !ok {
			n, ok = signals["SIG"+strings.ToUpper(v.Str)]
		}
		if !ok {
			c.errorf(x.Args[0], "unknown signal %q", v.Str)
			return nil
		}
		call.Text = v.Str
		c.setConst(x.Args[0], Const{Int: uint64(n)})
		c.probe.Types[x.Args[0]] = TInt64
	case isConst && (int64(v.Int) < 1 || v.Int > 64):
		c.errorf(x.Args[0], "signal %d is out of range 1..64", int64(v.Int))
		return nil
	case t.Kind != Int:
		c.errorf(x.Args[0], "%s() takes a signal number or name, not %s", x.Fun.Name, t)
		return nil
	}
	return TVoid
}

// checkCore checks core(PATH), which stops the process that hit the probe
// and has its core written to PATH, as kinst break --core does.
func (c *checker) checkCore(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	if runByKinst(c.probe.Provider) {
		c.errorf(x, "core() has no process to dump in %s", c.probe.Provider)
		return nil
	}
	if c.expr(x.Args[0]) == nil {
		return nil
	}
	v, ok := c.probe.Consts[x.Args[0]]
	if !ok || !v.IsStr || v.Str == "" {
		c.errorf(x.Args[0], "core() takes the core file's path as a string literal")
		return nil
	}
	call.Text = v.Str
	return TVoid
}

// checkUnwatch checks unwatch(ADDR): an integer or a pointer, the
// address of watchpoints to remove.
func (c *checker) checkUnwatch(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	if t.Kind != Int && t.Kind != Ptr {
		c.errorf(x.Args[0], "unwatch() takes an address, not %s", t)
		return nil
	}
	return TVoid
}

func (c *checker) checkOverride(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	if c.probe.Provider != "kprobe" && c.probe.Provider != "fmod_ret" {
		c.errorf(x, "override() works only in kprobe and fmod_ret probes")
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	if t.Kind != Int {
		c.errorf(x.Args[0], "override() takes an integer return value, not %s", t)
		return nil
	}
	return TVoid
}

// spaceOf is where a pointer or address of type t points: its own space
// for typed pointers, else the probe's (user memory in uprobes and for
// syscall tracepoint pointers, kernel memory elsewhere).
func (c *checker) spaceOf(t *Type) AddrSpace {
	if t.Kind == Ptr {
		return t.Space
	}
	if c.probe.Provider == "uprobe" || c.probe.Provider == "uretprobe" || c.probe.Provider == "usdt" {
		return UserSpace
	}
	return KernelSpace
}

func (c *checker) checkStr(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 2) {
		return nil
	}
	t, ok := c.paramOffset(x.Args[0])
	if ok && t == nil {
		return nil
	} else if !ok {
		if t = c.expr(x.Args[0]); t == nil {
			return nil
		}
	}
	if pt, ok := c.paramText(x.Args[0]); ok {
		// str($1) is the parameter's text even when it reads as a
		// number, as in bpftrace: str($1) of 42 is "42".
		t = pt
	}
	size := c.conf.StrLen
	constLen := true // the result's length is known now
	if len(x.Args) == 2 {
		lt := c.expr(x.Args[1])
		if lt == nil {
			return nil
		}
		if lt.Kind != Int {
			c.errorf(x.Args[1], "str() length must be an integer, not %s", lt)
			return nil
		}
		// A constant length makes the result just large enough.
		if v, ok := c.probe.Consts[x.Args[1]]; ok {
			if int64(v.Int) < 0 {
				c.errorf(x.Args[1], "str() length must not be negative")
				return nil
			}
			if int64(v.Int)+1 < int64(size) {
				size = int(v.Int) + 1
			} else if _, folded := c.probe.Consts[x.Args[0]]; int64(v.Int) >= int64(size) && !folded && c.conf.Compat != compat.V017 {
				c.warnf(x, "length param (%d) is too long and will be shortened to %d bytes (see BPFTRACE_MAX_STRLEN)", int64(v.Int), size)
			}
		} else {
			constLen = false
		}
	}
	switch t.Kind {
	case Str:
		// Strings are cut to the string length too, as bpftrace cuts
		// str($1) of a long parameter. A parameter's stays a constant,
		// for the functions that want one (kaddr(str($1))).
		size = min(size, t.Size)
		if v, ok := c.probe.Consts[x.Args[0]]; ok && v.IsStr && constLen {
			c.setConst(x, Const{IsStr: true, Str: v.Str[:min(len(v.Str), size-1)]})
		}
		return StrType(size)
	case Int, Ptr:
		call.Space = c.spaceOf(t)
		return StrType(size)
	}
	c.errorf(x.Args[0], "str() reads a string from an address; %s is not one", t)
	return nil
}

// paramText retypes x, a positional parameter perhaps in parentheses, as
// its text, and reports whether it is one.
func (c *checker) paramText(x syntax.Expr) (*Type, bool) {
	switch e := x.(type) {
	case *syntax.ParenExpr:
		t, ok := c.paramText(e.X)
		if ok {
			c.setConst(x, c.probe.Consts[e.X])
			c.probe.Types[x] = t
		}
		return t, ok
	case *syntax.ParamExpr:
		if e.Count {
			return nil, false
		}
		s := c.param(e.N)
		t := StrType(len(s) + 1)
		c.setConst(x, Const{IsStr: true, Str: s})
		c.probe.Types[x] = t
		return t, true
	}
	return nil, false
}

// paramOffset types $N + K, a positional parameter that is not a
// number with a constant added: bpftrace's pointer arithmetic on the
// parameter's text, which str() reads from the Kth byte on.
func (c *checker) paramOffset(x syntax.Expr) (*Type, bool) {
	b, ok := syntax.Unparen(x).(*syntax.BinaryExpr)
	if !ok || b.Op != syntax.ADD {
		return nil, false
	}
	p, ok := syntax.Unparen(b.X).(*syntax.ParamExpr)
	if !ok || p.Count {
		return nil, false
	}
	s := c.param(p.N)
	if _, isInt := paramInt(s); isInt {
		return nil, false
	}
	c.seen[x] = true
	yt := c.expr(b.Y)
	v, isConst := c.probe.Consts[b.Y]
	if yt == nil || yt.Kind != Int || !isConst || v.IsStr || int64(v.Int) < 0 {
		return nil, false
	}
	if v.Int > uint64(len(s)) {
		c.errorf(b.Y, "str($%d + N) reads from the Nth byte of $%d, which has %d: N must be at most that, not %d", p.N, p.N, len(s), v.Int)
		return nil, true
	}
	s = s[v.Int:]
	c.setConst(x, Const{IsStr: true, Str: s})
	c.probe.Types[x] = StrType(len(s) + 1)
	return StrType(len(s) + 1), true
}

func (c *checker) checkBuf(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 2) {
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	var n int64
	varLen := false
	switch {
	case len(x.Args) == 2:
		lt := c.expr(x.Args[1])
		if lt == nil {
			return nil
		}
		if v, ok := c.probe.Consts[x.Args[1]]; ok && !v.IsStr {
			n = int64(v.Int)
			break
		}
		if lt.Kind != Int {
			c.errorf(x.Args[1], "buf() length must be an integer, not %s", lt)
			return nil
		}
		// A length known only at run time reads at most the string
		// length, as in bpftrace 0.17; one byte records how much.
		n, varLen = int64(min(c.conf.StrLen, maxVarBuf)), true
	case t.Kind == Array || t.Kind == Str:
		n = int64(t.Size)
	default:
		c.errorf(x, "buf() needs a length for %s", t)
		return nil
	}
	if n < 0 || n > MaxStrLen {
		c.errorf(x, "buf() length must be between 0 and %d, not %d", MaxStrLen, n)
		return nil
	}
	if !t.IsInt() && t.Kind != Array && t.Kind != Str {
		c.errorf(x.Args[0], "buf() reads from an address; %s is not one", t)
		return nil
	}
	call.Space = c.spaceOf(t)
	return &Type{Kind: Buffer, Size: int(n) + 1, VarLen: varLen}
}

// maxVarBuf bounds buf() with a run-time length: its length byte must
// hold the count.
const maxVarBuf = 255

func (c *checker) checkStrncmp(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 3, 3) {
		return nil
	}
	a, b := c.probeString(x.Args[0], c.expr(x.Args[0])), c.probeString(x.Args[1], c.expr(x.Args[1]))
	if a == nil || b == nil {
		return nil
	}
	if a.Kind != Str || b.Kind != Str {
		c.errorf(x, "strncmp() compares strings, not %s and %s", a, b)
		return nil
	}
	if n, ok := c.constInt(x.Args[2], "strncmp() length"); !ok {
		return nil
	} else if n < 0 {
		c.errorf(x.Args[2], "strncmp() length must not be negative")
		return nil
	}
	return TUint64
}

// addressArg checks the one argument of a function that takes an address.
func (c *checker) addressArg(x *syntax.CallExpr) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	if !t.IsInt() {
		c.errorf(x.Args[0], "%s() takes an address, not %s", x.Fun.Name, t)
		return nil
	}
	return t
}

func (c *checker) checkSym(x *syntax.CallExpr, call *Call) *Type {
	if c.addressArg(x) == nil {
		return nil
	}
	if x.Fun.Name == "ksym" {
		return TKsym
	}
	return TUsym
}

func (c *checker) checkKaddr(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	name, ok := c.constString(x.Args[0], "kaddr() symbol")
	if !ok {
		return nil
	}
	if c.conf.Kernel == nil {
		c.errorf(x, "kaddr(): kernel symbols are not available")
		return nil
	}
	addr, err := c.conf.Kernel.Symbol(name)
	if err != nil {
		c.errorf(x.Args[0], "kaddr(): %v", err)
		return nil
	}
	call.Text = name
	c.setConst(x, Const{Int: addr})
	return TUint64
}

func (c *checker) checkNtop(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 2) {
		return nil
	}
	addr := x.Args[len(x.Args)-1]
	if len(x.Args) == 2 {
		// A family known only at run time, as bpftrace takes it, prints
		// an address of any other as an empty string.
		ft := c.expr(x.Args[0])
		if ft == nil {
			return nil
		}
		if v, ok := c.probe.Consts[x.Args[0]]; ok && !v.IsStr && v.Int != 2 && v.Int != 10 {
			c.errorf(x.Args[0], "ntop() address family must be AF_INET (2) or AF_INET6 (10), not %d", int64(v.Int))
			return nil
		}
		if ft.Kind != Int {
			c.errorf(x.Args[0], "ntop() address family must be an integer, not %s", ft)
			return nil
		}
	}
	t := c.expr(addr)
	if t == nil {
		return nil
	}
	switch {
	case t.Kind == Int && t.Size <= 4:
	case t.Kind == Int || t.Kind == Ptr:
	case (t.Kind == Array || t.Kind == Str) && (t.Size == 4 || t.Size == 16):
	default:
		c.errorf(addr, "ntop() takes an IPv4 address as an integer, or a 4- or 16-byte array, not %s", t)
		return nil
	}
	call.Space = c.spaceOf(t)
	return &Type{Kind: Inet, Size: 24}
}

// registers are the pt_regs names reg() accepts, with their offsets in
// x86-64's struct pt_regs.
var registers = map[string]int{
	"r15": 0, "r14": 8, "r13": 16, "r12": 24, "bp": 32, "bx": 40, "r11": 48,
	"r10": 56, "r9": 64, "r8": 72, "ax": 80, "cx": 88, "dx": 96, "si": 104,
	"di": 112, "orig_ax": 120, "ip": 128, "cs": 136, "flags": 144, "sp": 152, "ss": 160,
}

// RegisterOffset returns a register's offset in struct pt_regs.
func RegisterOffset(name string) (int, bool) {
	off, ok := registers[name]
	return off, ok
}

func (c *checker) checkReg(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	switch c.probe.Provider {
	case "kprobe", "kretprobe", "uprobe", "uretprobe", "usdt", "profile":
	default:
		c.errorf(x, "reg() reads the registers of kprobe, uprobe, usdt and profile probes only")
		return nil
	}
	name, ok := c.constString(x.Args[0], "reg() register name")
	if !ok {
		return nil
	}
	if _, ok := registers[name]; !ok {
		names := make([]string, 0, len(registers))
		for n := range registers {
			names = append(names, n)
		}
		sort.Strings(names)
		c.errorf(x.Args[0], "unknown register %q; x86-64 has %s", name, strings.Join(names, ", "))
		return nil
	}
	call.Text = name
	return TUint64
}

// stackModes are the layouts kstack and ustack print in, as the
// program's release has them: 0.17 has bpftrace and perf, 0.26.1 adds
// raw (addresses in hex) and build_id (each user frame as its file's
// build ID and offset).
func (c *checker) stackModes() []string {
	if c.conf.Compat == compat.V017 {
		return []string{"bpftrace", "perf"}
	}
	return []string{"bpftrace", "perf", "raw", "build_id"}
}

// MaxFrames bounds kstack(N) and ustack(N), as the kernel's
// perf_event_max_stack default does.
const MaxFrames = 127

func (c *checker) checkStack(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 0, 2) {
		return nil
	}
	t := &Type{Kind: Stack, Size: 8, User: x.Fun.Name == "ustack", Frames: defaultFrames, StackMode: c.stackMode()}
	args := x.Args
	if len(args) > 0 {
		if id, ok := args[0].(*syntax.Ident); ok {
			c.seen[id] = true // a mode is no expression of its own
			if modes := c.stackModes(); !slices.Contains(modes, id.Name) {
				c.errorf(id, "unknown stack mode %s: use one of %s", id.Name, strings.Join(modes, ", "))
				return nil
			}
			t.StackMode = id.Name
			args = args[1:]
		}
	}
	if len(args) > 1 {
		c.errorf(x, "%s() takes a mode and a frame count", x.Fun.Name)
		return nil
	}
	if len(args) == 1 {
		n, ok := c.constInt(args[0], x.Fun.Name+"() frame count")
		if !ok {
			return nil
		}
		if n < 1 || n > MaxFrames {
			c.errorf(args[0], "%s() frame count must be between 1 and %d", x.Fun.Name, MaxFrames)
			return nil
		}
		t.Frames = int(n)
	}
	if t.StackMode == "build_id" && !t.User {
		// The kernel has no build IDs to give for its own frames.
		c.errorf(x, "'build_id' stack mode can only be used for ustack")
		return nil
	}
	c.probe.Uses[x.Fun.Name] = true
	return t
}

func (c *checker) checkPtrSpace(x *syntax.CallExpr, call *Call) *Type {
	t := c.addressArg(x)
	if t == nil {
		return nil
	}
	space := KernelSpace
	if x.Fun.Name == "uptr" {
		space = UserSpace
	}
	nt := *t
	if nt.Kind == Int {
		nt = Type{Kind: Ptr, Size: 8}
	}
	nt.Space = space
	return &nt
}

// stackMode is the mode of a kstack or ustack that does not name one:
// the config block's stack_mode, or bpftrace.
func (c *checker) stackMode() string {
	if c.conf.StackMode != "" {
		return c.conf.StackMode
	}
	return "bpftrace"
}

// checkTaskField checks ppid(task) and its kind.
func (c *checker) checkTaskField(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 0, 1) {
		return nil
	}
	var task syntax.Expr
	if len(x.Args) == 1 {
		task = x.Args[0]
	}
	return c.taskField(x, task, x.Fun.Name)
}

// noSuchProcess is where bpftrace 0.26.1's warnf reports a comm(pid)
// whose process does not exist: the line of its standard library's comm
// macro.
var noSuchProcess = Origin{File: "stdlib/base.bt", Line: 162, Col: 7, EndCol: 46}

// checkComm checks comm() and bpftrace 0.26.1's comm(pid), the name of
// the task pid names: found and held by the kfunc bpf_task_from_pid,
// which only some probe types may call, read at the offset this
// kernel's struct task_struct has comm at (call.Offset). A pid with no
// task gives "N/A" and a warning the call makes as the program could
// have written it (call.Then).
func (c *checker) checkComm(x *syntax.CallExpr, call *Call) *Type {
	if len(x.Args) > 0 && c.conf.Compat == compat.V017 {
		c.errorf(x, "comm() takes no arguments")
		return nil
	}
	if !c.nargs(x, 0, 1) {
		return nil
	}
	if len(x.Args) == 0 {
		id := &syntax.Ident{NamePos: x.Fun.NamePos, Name: "comm"}
		t := c.expr(id)
		if t != nil {
			c.probe.Expand[x] = id
		}
		return t
	}
	if t := c.expr(x.Args[0]); t == nil {
		return nil
	} else if t.Kind != Int {
		c.errorf(x.Args[0], "Only integer supported for comm()'s pid")
		return nil
	}
	k := c.conf.Kernel
	if k == nil || !k.KfuncAllowed("bpf_task_from_pid", c.probe.Provider) {
		c.errorf(x, "Syntax comm(PID) is not supported in this probe type yet. Type: %s", probeType(c.probe.Provider))
		return nil
	}
	task, err := k.Type(syntax.STRUCT, "task_struct")
	if err != nil {
		c.errorf(x, "comm(pid) reads struct task_struct: %v", err)
		return nil
	}
	f := task.Field("comm")
	if f == nil {
		c.errorf(x, "comm(pid) reads struct task_struct's comm, which this kernel lacks")
		return nil
	}
	pos := x.Pos()
	warn := &syntax.CallExpr{
		Fun:    &syntax.Ident{NamePos: pos, Name: "warnf"},
		Args:   []syntax.Expr{&syntax.StringLit{ValuePos: pos, EndPos: pos, Value: "No such process (pid=%d)"}, x.Args[0]},
		Rparen: x.End() - 1,
	}
	if c.call(warn, true) == nil {
		return nil
	}
	c.probe.Calls[warn].Origin = &noSuchProcess
	call.Offset, call.Then = uint64(f.Offset), []*syntax.CallExpr{warn}
	return StrType(64) // as 0.26.1's standard library declares the name it fills
}

// modeArg reads the mode a builtin takes as its one argument, a bare
// name among modes; "" when there is none.
func (c *checker) modeArg(x *syntax.CallExpr, modes ...string) (string, bool) {
	for _, a := range x.Args {
		if id, ok := a.(*syntax.Ident); ok && slices.Contains(modes, id.Name) {
			c.seen[a] = true // a mode is no expression of its own
		}
	}
	if !c.nargs(x, 0, 1) {
		return "", false
	}
	if len(x.Args) == 0 {
		return "", true
	}
	id, ok := x.Args[0].(*syntax.Ident)
	if !ok || !slices.Contains(modes, id.Name) {
		c.errorf(x.Args[0], "%s() takes one of %s", x.Fun.Name, strings.Join(modes, ", "))
		c.seen[x.Args[0]] = ok
		return "", false
	}
	return id.Name, true
}

// checkPidNs checks pid(curr_ns), pid(init) and the same of tid: the
// id in kinst's PID namespace, or in the initial one.
func (c *checker) checkPidNs(x *syntax.CallExpr, call *Call) *Type {
	mode, ok := c.modeArg(x, "curr_ns", "init")
	if !ok {
		return nil
	}
	call.Text = mode
	c.probe.Uses[x.Fun.Name] = true
	return TUint64
}

// checkNsecs checks nsecs(boot), nsecs(monotonic), nsecs(tai) and
// nsecs(sw_tai), the clocks nsecs reads.
func (c *checker) checkNsecs(x *syntax.CallExpr, call *Call) *Type {
	mode, ok := c.modeArg(x, "boot", "monotonic", "tai", "sw_tai")
	if !ok {
		return nil
	}
	call.Text = mode
	c.probe.Uses["nsecs"] = true
	return TUint64
}

// checkIsErr checks is_err(ptr): whether ptr is an error code in a
// pointer, as the kernel's IS_ERR().
func (c *checker) checkIsErr(x *syntax.CallExpr, call *Call) *Type {
	if !c.nargs(x, 1, 1) {
		return nil
	}
	t := c.expr(x.Args[0])
	if t == nil {
		return nil
	}
	if !t.IsInt() {
		c.errorf(x.Args[0], "is_err() takes a pointer, not %s", t)
		return nil
	}
	return c.boolType()
}
