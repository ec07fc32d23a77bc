package pprof

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/internal/pbwire"
	"kinst.dev/kinst/output"
)

// Options say what a profile holds besides the samples.
type Options struct {
	// Maps names the maps that become sample types, in order, even when
	// empty; nil takes every map whose keys hold a stack.
	Maps []string
	// Labels names the key elements by position; a missing or empty
	// name gives "key" and the position.
	Labels []string
	// Period, when not zero, is the nanoseconds of CPU time a sample of
	// the first map stands for, as in a sampling profiler: its samples
	// gain a "cpu" value in nanoseconds, which pprof shows by default.
	Period int64
	// Start and Duration are when the profile was taken.
	Start    time.Time
	Duration time.Duration
}

// ErrNoStacks reports that no map is keyed by a kstack or a ustack.
var ErrNoStacks = errors.New("no map is keyed by kstack or ustack")

// kernelFile is the name profilers give the kernel's mapping.
const kernelFile = "[kernel.kallsyms]"

// The parts of a profile, as profile.proto describes them; IDs start at 1.
type (
	valueType struct{ typ, unit string }
	sample    struct {
		locations []*location
		values    []int64
		labels    map[string]string // text key elements by label name
		numLabels map[string]int64  // integer ones
	}
	mapping struct {
		id                   uint64
		start, limit, offset uint64
		file, buildID        string
	}
	location struct {
		id       uint64
		mapping  *mapping // nil for an address no file holds
		addr     uint64
		function *function // nil where the frame has no symbol
	}
	function struct {
		id   uint64
		name string
	}
)

// builder gathers a profile's mappings, functions and locations, each
// once.
type builder struct {
	sampleTypes []valueType
	samples     []*sample
	mappings    []*mapping
	locations   []*location
	functions   []*function
	kernel      *mapping
	byMapping   map[mappingKey]*mapping
	byFunction  map[[2]string]*function
	byLocation  map[locationKey]*location
}

type mappingKey struct {
	file                 string
	start, limit, offset uint64
}

type locationKey struct {
	m    *mapping
	addr uint64
}

// Write writes a profile of the maps keyed by stacks to w: profile.proto,
// gzipped, as go tool pprof reads it.
func Write(w io.Writer, maps []*output.Map, opts Options) error {
	chosen := chooseMaps(maps, opts.Maps)
	if len(chosen) == 0 {
		return ErrNoStacks
	}
	b := &builder{
		byMapping:  map[mappingKey]*mapping{},
		byFunction: map[[2]string]*function{},
		byLocation: map[locationKey]*location{},
	}
	for _, m := range chosen {
		unit := "count"
		if m.Kind != output.KindCount && m.Kind != output.KindHist && m.Kind != output.KindLhist {
			unit = ""
		}
		b.sampleTypes = append(b.sampleTypes, valueType{sampleType(m.Name), unit})
	}
	if opts.Period != 0 {
		b.sampleTypes = append(b.sampleTypes, valueType{"cpu", "nanoseconds"})
	}
	for i, m := range chosen {
		for _, e := range m.Entries {
			s, err := b.sample(e, opts.Labels)
			if err != nil {
				return fmt.Errorf("map %s: %w", m.Name, err)
			}
			s.values = make([]int64, len(b.sampleTypes))
			v := value(e.Value)
			s.values[i] = v
			if opts.Period != 0 && i == 0 {
				s.values[len(s.values)-1] = v * opts.Period
			}
			b.samples = append(b.samples, s)
		}
	}
	b.kernelLast()
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(b.encode(opts)); err != nil {
		return err
	}
	return zw.Close()
}

// chooseMaps picks the maps named, or those keyed by a stack.
func chooseMaps(maps []*output.Map, names []string) []*output.Map {
	var chosen []*output.Map
	for _, m := range maps {
		if names != nil && slices.Contains(names, m.Name) || names == nil && len(m.Entries) > 0 && hasStack(m.Entries[0].Key) {
			chosen = append(chosen, m)
		}
	}
	return chosen
}

func hasStack(key []output.Value) bool {
	return slices.ContainsFunc(key, isStack)
}

func isStack(v output.Value) bool {
	return v.Kind() == output.KindKstack || v.Kind() == output.KindUstack
}

// sampleType names a map's values: its name without the @, or "samples"
// for the map called @.
func sampleType(name string) string {
	if name = strings.TrimPrefix(name, "@"); name == "" {
		return "samples"
	}
	return name
}

// value is an entry's sample value.
func value(v output.Value) int64 {
	switch v.Kind() {
	case output.KindAvg, output.KindStats:
		return v.Total()
	case output.KindHist, output.KindLhist:
		var n uint64
		for _, c := range v.Buckets() {
			n += c
		}
		return int64(n)
	}
	return v.Int()
}

// labelName names the key element at position i.
func labelName(labels []string, i int) string {
	if i < len(labels) && labels[i] != "" {
		return labels[i]
	}
	return "key" + strconv.Itoa(i)
}

// sample makes the sample of one entry, without its values.
func (b *builder) sample(e output.Entry, labels []string) (*sample, error) {
	s := &sample{}
	// Kernel frames are above user frames: the leaf comes first.
	for _, kind := range []output.Kind{output.KindKstack, output.KindUstack} {
		for _, k := range e.Key {
			if k.Kind() != kind {
				continue
			}
			for _, f := range k.Frames() {
				s.locations = append(s.locations, b.location(f, kind == output.KindKstack))
			}
		}
	}
	for i, k := range e.Key {
		name := labelName(labels, i)
		switch {
		case isStack(k):
		case k.Kind() == output.KindInt:
			if s.numLabels == nil {
				s.numLabels = map[string]int64{}
			}
			s.numLabels[name] = k.Int()
		default:
			text, err := k.KeyText()
			if err != nil {
				return nil, err
			}
			if s.labels == nil {
				s.labels = map[string]string{}
			}
			s.labels[name] = text
		}
	}
	return s, nil
}

// location returns the location of a frame.
func (b *builder) location(f output.Frame, kernel bool) *location {
	m := b.mapping(f, kernel)
	key := locationKey{m, f.Addr}
	if l := b.byLocation[key]; l != nil {
		return l
	}
	l := &location{id: uint64(len(b.locations) + 1), mapping: m, addr: f.Addr}
	if f.Symbol != "" {
		l.function = b.function(f.Symbol, f.Module)
	}
	b.byLocation[key] = l
	b.locations = append(b.locations, l)
	return l
}

// mapping returns the mapping of a frame: the kernel's, or its file's;
// nil for a user address no file holds.
func (b *builder) mapping(f output.Frame, kernel bool) *mapping {
	if kernel {
		if b.kernel == nil {
			b.kernel = b.addMapping(&mapping{file: kernelFile, buildID: kernelBuildID(), start: f.Addr, limit: f.Addr + 1})
		}
		// The kernel's mapping spans the addresses the profile holds.
		b.kernel.start = min(b.kernel.start, f.Addr)
		b.kernel.limit = max(b.kernel.limit, f.Addr+1)
		return b.kernel
	}
	if f.Module == "" {
		return nil
	}
	key := mappingKey{f.Module, f.MapStart, f.MapEnd, f.MapOffset}
	if m := b.byMapping[key]; m != nil {
		return m
	}
	m := b.addMapping(&mapping{file: f.Module, buildID: f.BuildID, start: f.MapStart, limit: f.MapEnd, offset: f.MapOffset})
	b.byMapping[key] = m
	return m
}

// kernelLast moves the kernel's mapping after the others: pprof takes
// the first mapping for the profiled program.
func (b *builder) kernelLast() {
	if b.kernel == nil {
		return
	}
	ms := slices.DeleteFunc(b.mappings, func(m *mapping) bool { return m == b.kernel })
	b.mappings = append(ms, b.kernel)
	for i, m := range b.mappings {
		m.id = uint64(i + 1)
	}
}

func (b *builder) addMapping(m *mapping) *mapping {
	m.id = uint64(len(b.mappings) + 1)
	b.mappings = append(b.mappings, m)
	return m
}

// function returns the function called name in file.
func (b *builder) function(name, file string) *function {
	key := [2]string{name, file}
	if fn := b.byFunction[key]; fn != nil {
		return fn
	}
	fn := &function{id: uint64(len(b.functions) + 1), name: name}
	b.byFunction[key] = fn
	b.functions = append(b.functions, fn)
	return fn
}

// kernelBuildID reads the running kernel's build ID from its notes, or
// gives "".
func kernelBuildID() string {
	data, err := os.ReadFile("/sys/kernel/notes")
	if err != nil {
		return ""
	}
	return elfsym.NoteBuildID(data, binary.NativeEndian)
}

// Field numbers of profile.proto.
const (
	profileSampleType    = 1
	profileSample        = 2
	profileMapping       = 3
	profileLocation      = 4
	profileFunction      = 5
	profileStringTable   = 6
	profileTimeNanos     = 9
	profileDurationNanos = 10
	profilePeriodType    = 11
	profilePeriod        = 12

	valueTypeType = 1
	valueTypeUnit = 2

	sampleLocationID = 1
	sampleValue      = 2
	sampleLabel      = 3

	labelKey = 1
	labelStr = 2
	labelNum = 3

	mappingID           = 1
	mappingStart        = 2
	mappingLimit        = 3
	mappingOffset       = 4
	mappingFilename     = 5
	mappingBuildID      = 6
	mappingHasFunctions = 7

	locationID        = 1
	locationMappingID = 2
	locationAddress   = 3
	locationLine      = 4

	lineFunctionID = 1

	functionID         = 1
	functionName       = 2
	functionSystemName = 3
)

// encoder writes a profile's messages, gathering its strings into the
// string table, whose entry 0 is "".
type encoder struct {
	strings []string
	index   map[string]int64
}

func (e *encoder) str(s string) int64 {
	if i, ok := e.index[s]; ok {
		return i
	}
	i := int64(len(e.strings))
	e.strings = append(e.strings, s)
	e.index[s] = i
	return i
}

// varint appends a varint field, left out when zero as proto3 leaves it.
func varint(b []byte, field pbwire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return pbwire.Varint(b, field, v)
}

// packed appends a packed repeated varint field.
func packed[T int64 | uint64](b []byte, field pbwire.Number, vs []T) []byte {
	if len(vs) == 0 {
		return b
	}
	var m []byte
	for _, v := range vs {
		m = pbwire.AppendVarint(m, uint64(v))
	}
	return pbwire.Bytes(b, field, m)
}

func (e *encoder) valueType(vt valueType) []byte {
	var m []byte
	m = varint(m, valueTypeType, uint64(e.str(vt.typ)))
	return varint(m, valueTypeUnit, uint64(e.str(vt.unit)))
}

// encode renders the profile as profile.proto's Profile message.
func (b *builder) encode(opts Options) []byte {
	e := &encoder{strings: []string{""}, index: map[string]int64{"": 0}}
	var p []byte
	for _, st := range b.sampleTypes {
		p = pbwire.Bytes(p, profileSampleType, e.valueType(st))
	}
	for _, s := range b.samples {
		var m []byte
		ids := make([]uint64, len(s.locations))
		for i, l := range s.locations {
			ids[i] = l.id
		}
		m = packed(m, sampleLocationID, ids)
		m = packed(m, sampleValue, s.values)
		for _, k := range slices.Sorted(maps.Keys(s.labels)) {
			var l []byte
			l = varint(l, labelKey, uint64(e.str(k)))
			l = varint(l, labelStr, uint64(e.str(s.labels[k])))
			m = pbwire.Bytes(m, sampleLabel, l)
		}
		for _, k := range slices.Sorted(maps.Keys(s.numLabels)) {
			var l []byte
			l = varint(l, labelKey, uint64(e.str(k)))
			l = varint(l, labelNum, uint64(s.numLabels[k]))
			m = pbwire.Bytes(m, sampleLabel, l)
		}
		p = pbwire.Bytes(p, profileSample, m)
	}
	for _, mp := range b.mappings {
		var m []byte
		m = varint(m, mappingID, mp.id)
		m = varint(m, mappingStart, mp.start)
		m = varint(m, mappingLimit, mp.limit)
		m = varint(m, mappingOffset, mp.offset)
		m = varint(m, mappingFilename, uint64(e.str(mp.file)))
		m = varint(m, mappingBuildID, uint64(e.str(mp.buildID)))
		// The frames are symbolized already: pprof must not look again.
		m = varint(m, mappingHasFunctions, 1)
		p = pbwire.Bytes(p, profileMapping, m)
	}
	for _, l := range b.locations {
		var m []byte
		m = varint(m, locationID, l.id)
		if l.mapping != nil {
			m = varint(m, locationMappingID, l.mapping.id)
		}
		m = varint(m, locationAddress, l.addr)
		if l.function != nil {
			m = pbwire.Bytes(m, locationLine, varint(nil, lineFunctionID, l.function.id))
		}
		p = pbwire.Bytes(p, profileLocation, m)
	}
	for _, fn := range b.functions {
		var m []byte
		m = varint(m, functionID, fn.id)
		m = varint(m, functionName, uint64(e.str(fn.name)))
		m = varint(m, functionSystemName, uint64(e.str(fn.name)))
		p = pbwire.Bytes(p, profileFunction, m)
	}
	if !opts.Start.IsZero() {
		p = varint(p, profileTimeNanos, uint64(opts.Start.UnixNano()))
	}
	p = varint(p, profileDurationNanos, uint64(opts.Duration.Nanoseconds()))
	if opts.Period != 0 {
		p = pbwire.Bytes(p, profilePeriodType, e.valueType(valueType{"cpu", "nanoseconds"}))
		p = varint(p, profilePeriod, uint64(opts.Period))
	}
	// The string table goes last: every message above added to it.
	for _, s := range e.strings {
		p = pbwire.String(p, profileStringTable, s)
	}
	return p
}

// WriteFolded writes the entries of m as folded stacks, one line per
// distinct stack, sorted: the key elements at positions roots (nil: every
// element that is not a stack) as the outermost frames, then the user
// frames and the kernel frames, root first, joined by semicolons, a
// space, and the total of the entries' values.
func WriteFolded(w io.Writer, m *output.Map, roots []int) error {
	totals := map[string]int64{}
	for _, e := range m.Entries {
		var frames []string
		for i, k := range e.Key {
			if roots == nil && !isStack(k) || slices.Contains(roots, i) {
				text, err := k.KeyText()
				if err != nil {
					return fmt.Errorf("map %s: %w", m.Name, err)
				}
				frames = append(frames, folded(text))
			}
		}
		for _, kind := range []output.Kind{output.KindUstack, output.KindKstack} {
			for _, k := range e.Key {
				if k.Kind() != kind {
					continue
				}
				fs := k.Frames()
				for i := len(fs) - 1; i >= 0; i-- {
					frames = append(frames, frameName(fs[i]))
				}
			}
		}
		totals[strings.Join(frames, ";")] += value(e.Value)
	}
	lines := make([]string, 0, len(totals))
	for stack := range totals {
		lines = append(lines, stack)
	}
	slices.Sort(lines)
	var buf bytes.Buffer
	for _, stack := range lines {
		fmt.Fprintf(&buf, "%s %d\n", stack, totals[stack])
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// frameName is a frame as a folded stack shows it: its function, or its
// address in hex.
func frameName(f output.Frame) string {
	if f.Symbol == "" {
		return "0x" + strconv.FormatUint(f.Addr, 16)
	}
	return folded(f.Symbol)
}

// foldedText keeps a frame's text from splitting a folded line, which
// semicolons, spaces and newlines would.
var foldedText = strings.NewReplacer(";", ":", " ", "_", "\n", "_")

func folded(s string) string { return foldedText.Replace(s) }
