package perfetto

import (
	"maps"
	"slices"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/pbwire"
)

// Field numbers of perfetto_trace.proto.
const (
	tracePacket = 1 // Trace.packet

	packetTimestamp       = 8  // TracePacket.timestamp
	packetClockID         = 58 // TracePacket.timestamp_clock_id
	packetSequenceID      = 10 // TracePacket.trusted_packet_sequence_id
	packetSequenceFlags   = 13 // TracePacket.sequence_flags
	packetClockSnapshot   = 6  // TracePacket.clock_snapshot
	packetTrackEvent      = 11 // TracePacket.track_event
	packetTrackDescriptor = 60 // TracePacket.track_descriptor

	snapshotClock   = 1 // ClockSnapshot.clocks
	clockID         = 1 // ClockSnapshot.Clock.clock_id
	clockTimestamp  = 2 // ClockSnapshot.Clock.timestamp
	snapshotPrimary = 2 // ClockSnapshot.primary_trace_clock

	trackUUID    = 1 // TrackDescriptor.uuid
	trackParent  = 5 // TrackDescriptor.parent_uuid
	trackProcess = 3 // TrackDescriptor.process
	trackThread  = 4 // TrackDescriptor.thread

	processPid  = 1 // ProcessDescriptor.pid
	processName = 6 // ProcessDescriptor.process_name

	threadPid  = 1 // ThreadDescriptor.pid
	threadTid  = 2 // ThreadDescriptor.tid
	threadName = 5 // ThreadDescriptor.thread_name

	eventType       = 9  // TrackEvent.type
	eventTrack      = 11 // TrackEvent.track_uuid
	eventName       = 23 // TrackEvent.name
	eventAnnotation = 4  // TrackEvent.debug_annotations

	annotationName    = 10 // DebugAnnotation.name
	annotationBool    = 2  // DebugAnnotation.bool_value
	annotationUint    = 3  // DebugAnnotation.uint_value
	annotationInt     = 4  // DebugAnnotation.int_value
	annotationString  = 6  // DebugAnnotation.string_value
	annotationPointer = 7  // DebugAnnotation.pointer_value
)

// TrackEvent.Type values.
const (
	sliceBegin = 1
	sliceEnd   = 2
	instant    = 3
)

// Builtin clock ids, and the sequence flag that says a sequence starts
// with no state from earlier packets.
const (
	clockRealtime                = 1
	clockMonotonic               = 3
	clockBoottime                = 6
	seqIncrementalCleared        = 1
	sequenceID                   = 1
	processUUIDBase       uint64 = 1 << 62
	threadUUIDBase        uint64 = 1 << 61
)

// An Arg is one debug annotation of an event.
type Arg struct {
	Name  string
	field pbwire.Number
	n     uint64
	s     string
}

// Int is a signed integer argument.
func Int(name string, v int64) Arg { return Arg{Name: name, field: annotationInt, n: uint64(v)} }

// Uint is an unsigned integer argument.
func Uint(name string, v uint64) Arg { return Arg{Name: name, field: annotationUint, n: v} }

// Pointer is an address, which readers show in hex.
func Pointer(name string, v uint64) Arg { return Arg{Name: name, field: annotationPointer, n: v} }

// String is a text argument.
func String(name, v string) Arg { return Arg{Name: name, field: annotationString, s: v} }

// Bool is a true or false argument.
func Bool(name string, v bool) Arg {
	a := Arg{Name: name, field: annotationBool}
	if v {
		a.n = 1
	}
	return a
}

// An Event is something a thread did at a time.
type Event struct {
	Time     uint64 // CLOCK_MONOTONIC nanoseconds
	Pid, Tid int
	Comm     string // the thread's name
	Name     string // the call's
	Args     []Arg
}

// Unmatched is the annotation that marks a slice whose return was not
// seen, ended where the trace ends or where a caller returned, and an
// instant for a return whose call was not seen.
const Unmatched = "unmatched"

// A Trace turns events into packets, describing each process and
// thread the first time it appears and pairing each thread's returns
// with its calls.
type Trace struct {
	started   bool
	processes map[int]bool
	threads   map[int]*thread
	last      uint64 // the latest event's time
	clocks    [3]uint64
}

// thread is one thread's track and the calls it is inside, innermost
// last.
type thread struct {
	open []string
}

// NewTrace starts a trace, reading the clocks it will snapshot.
func NewTrace() *Trace {
	t := &Trace{processes: map[int]bool{}, threads: map[int]*thread{}}
	for i, id := range []int32{unix.CLOCK_MONOTONIC, unix.CLOCK_BOOTTIME, unix.CLOCK_REALTIME} {
		var ts unix.Timespec
		if unix.ClockGettime(id, &ts) == nil {
			t.clocks[i] = uint64(ts.Nano())
		}
	}
	return t
}

// AppendBegin appends the packets of a call's start.
func (t *Trace) AppendBegin(b []byte, e Event) []byte {
	b, th := t.track(b, e)
	th.open = append(th.open, e.Name)
	return t.appendEvent(b, e.Time, e.Tid, sliceBegin, e.Name, e.Args)
}

// AppendEnd appends the packets of a call's return. Calls the thread
// began inside it and has not returned from are ended first, marked
// unmatched; a return from no call the thread is inside becomes an
// instant, marked unmatched.
func (t *Trace) AppendEnd(b []byte, e Event) []byte {
	b, th := t.track(b, e)
	i := len(th.open) - 1
	for i >= 0 && th.open[i] != e.Name {
		i--
	}
	if i < 0 {
		args := append(e.Args[:len(e.Args):len(e.Args)], String(Unmatched, "the call was not seen"))
		return t.appendEvent(b, e.Time, e.Tid, instant, e.Name, args)
	}
	for len(th.open) > i+1 {
		b = t.appendUnmatchedEnd(b, e.Time, e.Tid, th)
	}
	th.open = th.open[:i]
	return t.appendEvent(b, e.Time, e.Tid, sliceEnd, "", e.Args)
}

// AppendInstant appends the packets of an event without duration.
func (t *Trace) AppendInstant(b []byte, e Event) []byte {
	b, _ = t.track(b, e)
	return t.appendEvent(b, e.Time, e.Tid, instant, e.Name, e.Args)
}

// AppendClose ends every call still open, marked unmatched, at the time
// of the latest event.
func (t *Trace) AppendClose(b []byte) []byte {
	for _, tid := range slices.Sorted(maps.Keys(t.threads)) {
		th := t.threads[tid]
		for len(th.open) > 0 {
			b = t.appendUnmatchedEnd(b, t.last, tid, th)
		}
	}
	return b
}

func (t *Trace) appendUnmatchedEnd(b []byte, ts uint64, tid int, th *thread) []byte {
	th.open = th.open[:len(th.open)-1]
	return t.appendEvent(b, ts, tid, sliceEnd, "", []Arg{String(Unmatched, "the return was not seen")})
}

// track appends what the event's thread needs first: the clock
// snapshot of the trace, its process's and its own track descriptors.
func (t *Trace) track(b []byte, e Event) ([]byte, *thread) {
	if !t.started {
		t.started = true
		b = t.appendClockSnapshot(b)
	}
	t.last = max(t.last, e.Time)
	if !t.processes[e.Pid] {
		t.processes[e.Pid] = true
		var proc []byte
		proc = pbwire.Varint(proc, processPid, uint64(e.Pid))
		proc = pbwire.String(proc, processName, e.Comm)
		var desc []byte
		desc = pbwire.Varint(desc, trackUUID, processUUIDBase+uint64(e.Pid))
		desc = pbwire.Bytes(desc, trackProcess, proc)
		b = appendPacket(b, nil, packetTrackDescriptor, desc)
	}
	th := t.threads[e.Tid]
	if th == nil {
		th = &thread{}
		t.threads[e.Tid] = th
		var td []byte
		td = pbwire.Varint(td, threadPid, uint64(e.Pid))
		td = pbwire.Varint(td, threadTid, uint64(e.Tid))
		td = pbwire.String(td, threadName, e.Comm)
		var desc []byte
		desc = pbwire.Varint(desc, trackUUID, threadUUIDBase+uint64(e.Tid))
		desc = pbwire.Varint(desc, trackParent, processUUIDBase+uint64(e.Pid))
		desc = pbwire.Bytes(desc, trackThread, td)
		b = appendPacket(b, nil, packetTrackDescriptor, desc)
	}
	return b, th
}

// appendClockSnapshot appends the first packet: the clocks read
// together, and the sequence's start.
func (t *Trace) appendClockSnapshot(b []byte) []byte {
	var snap []byte
	for i, id := range []uint64{clockMonotonic, clockBoottime, clockRealtime} {
		var clock []byte
		clock = pbwire.Varint(clock, clockID, id)
		clock = pbwire.Varint(clock, clockTimestamp, t.clocks[i])
		snap = pbwire.Bytes(snap, snapshotClock, clock)
	}
	snap = pbwire.Varint(snap, snapshotPrimary, clockBoottime)
	var head []byte
	head = pbwire.Varint(head, packetTimestamp, t.clocks[1])
	head = pbwire.Varint(head, packetClockID, clockBoottime)
	head = pbwire.Varint(head, packetSequenceFlags, seqIncrementalCleared)
	return appendPacket(b, head, packetClockSnapshot, snap)
}

// appendEvent appends a track event packet.
func (t *Trace) appendEvent(b []byte, ts uint64, tid, typ int, name string, args []Arg) []byte {
	var ev []byte
	ev = pbwire.Varint(ev, eventType, uint64(typ))
	ev = pbwire.Varint(ev, eventTrack, threadUUIDBase+uint64(tid))
	if name != "" {
		ev = pbwire.String(ev, eventName, name)
	}
	for _, a := range args {
		var ann []byte
		ann = pbwire.String(ann, annotationName, a.Name)
		if a.field == annotationString {
			ann = pbwire.String(ann, a.field, a.s)
		} else {
			ann = pbwire.Varint(ann, a.field, a.n)
		}
		ev = pbwire.Bytes(ev, eventAnnotation, ann)
	}
	var head []byte
	head = pbwire.Varint(head, packetTimestamp, ts)
	head = pbwire.Varint(head, packetClockID, clockMonotonic)
	return appendPacket(b, head, packetTrackEvent, ev)
}

// appendPacket appends one TracePacket of the sequence: head's fields,
// then data as the field called field.
func appendPacket(b, head []byte, field pbwire.Number, data []byte) []byte {
	var p []byte
	p = append(p, head...)
	p = pbwire.Varint(p, packetSequenceID, sequenceID)
	p = pbwire.Bytes(p, field, data)
	return pbwire.Bytes(b, tracePacket, p)
}
