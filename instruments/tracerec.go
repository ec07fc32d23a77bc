package instruments

import "kinst.dev/kinst/check"

// valueFormat says how a logged value is rendered.
type valueFormat int

const (
	signedValue valueFormat = iota
	unsignedValue
	hexValue
	stringValue
)

// verb is the printf conversion that carries a value of the format.
func (f valueFormat) verb() string {
	switch f {
	case unsignedValue:
		return "%llu"
	case hexValue:
		return "%p"
	case stringValue:
		return "%s"
	}
	return "%lld"
}

// The fields every trace record starts with, in order. A wildcard's
// records then carry the probe that fired.
const (
	recNsecs = iota
	recCPU
	recPid
	recTid
	recComm
	recDepth
	recFixed // the first field after the common ones
)

// A recordKind is what a trace record reports.
type recordKind uint8

const (
	headerRecord recordKind = iota // the text log's column header, printed from BEGIN
	entryRecord                    // a call
	exitRecord                     // a return, with the call's duration
	hitRecord                      // an event with no return: a tracepoint, a kprobe inside a function
)

// A traceRecord is how to read one printf record of the trace program.
// The trace program has one printf per probe, so records are keyed by
// the probe that sends them, as written in the program: BEGIN, or the
// attach point of a target's entry or exit.
type traceRecord struct {
	kind recordKind
	// target is what the probe of a single function resolved to; nil
	// for a wildcard's, whose records carry the probe that fired, one
	// of targets. fn is what the target says of the function.
	target  *check.Target
	targets map[string]*check.Target // by full name
	fn      *probeFunc
	args    []traceArg // entry: the arguments
	stack   bool       // entry: a stack follows the arguments
	ret     bool       // exit: the return value follows the common fields
	retFmt  valueFormat
}

// fields is how many values the record carries.
func (r *traceRecord) fields() int {
	n := recFixed + len(r.args)
	if r.target == nil {
		n++
	}
	if r.stack {
		n++
	}
	if r.kind == exitRecord {
		n++ // the duration
		if r.ret {
			n++
		}
	}
	return n
}
