package instruments

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

// A traceRecord is how to read one printf record of the trace program.
type traceRecord struct {
	header bool // the text log's column header, printed from BEGIN
	exit   bool
	hit    bool // an event with no return: a tracepoint, a kprobe inside a function
	// probe names the probe of a single function's records; "" for a
	// wildcard's, which carry it. fn is what it says of the function.
	probe  string
	fn     *probeFunc
	args   []traceArg // entry: the arguments
	stack  bool       // entry: a stack follows the arguments
	ret    bool       // exit: the return value follows the common fields
	retFmt valueFormat
}

// fields is how many values the record carries.
func (r *traceRecord) fields() int {
	n := recFixed + len(r.args)
	if r.probe == "" {
		n++
	}
	if r.stack {
		n++
	}
	if r.exit {
		n++ // the duration
		if r.ret {
			n++
		}
	}
	return n
}
