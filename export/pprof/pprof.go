package pprof

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"kinst.dev/kinst/elfsym"
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

// builder gathers a profile's mappings, functions and locations, each
// once.
type builder struct {
	p         *profile.Profile
	kernel    *profile.Mapping
	mappings  map[mappingKey]*profile.Mapping
	functions map[[2]string]*profile.Function
	locations map[locationKey]*profile.Location
}

type mappingKey struct {
	file                 string
	start, limit, offset uint64
}

type locationKey struct {
	m    *profile.Mapping
	addr uint64
}

// Profile makes a profile of the maps keyed by stacks.
func Profile(maps []*output.Map, opts Options) (*profile.Profile, error) {
	chosen := chooseMaps(maps, opts.Maps)
	if len(chosen) == 0 {
		return nil, ErrNoStacks
	}
	b := &builder{
		p: &profile.Profile{
			TimeNanos:     opts.Start.UnixNano(),
			DurationNanos: opts.Duration.Nanoseconds(),
		},
		mappings:  map[mappingKey]*profile.Mapping{},
		functions: map[[2]string]*profile.Function{},
		locations: map[locationKey]*profile.Location{},
	}
	if opts.Start.IsZero() {
		b.p.TimeNanos = 0
	}
	for _, m := range chosen {
		unit := "count"
		if m.Kind != output.KindCount && m.Kind != output.KindHist && m.Kind != output.KindLhist {
			unit = ""
		}
		b.p.SampleType = append(b.p.SampleType, &profile.ValueType{Type: sampleType(m.Name), Unit: unit})
	}
	if opts.Period != 0 {
		b.p.SampleType = append(b.p.SampleType, &profile.ValueType{Type: "cpu", Unit: "nanoseconds"})
		b.p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
		b.p.Period = opts.Period
	}
	for i, m := range chosen {
		for _, e := range m.Entries {
			s, err := b.sample(e, opts.Labels)
			if err != nil {
				return nil, fmt.Errorf("map %s: %w", m.Name, err)
			}
			s.Value = make([]int64, len(b.p.SampleType))
			v := value(e.Value)
			s.Value[i] = v
			if opts.Period != 0 && i == 0 {
				s.Value[len(s.Value)-1] = v * opts.Period
			}
			b.p.Sample = append(b.p.Sample, s)
		}
	}
	b.kernelLast()
	if err := b.p.CheckValid(); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return b.p, nil
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
func (b *builder) sample(e output.Entry, labels []string) (*profile.Sample, error) {
	s := &profile.Sample{}
	// Kernel frames are above user frames: the leaf comes first.
	for _, kind := range []output.Kind{output.KindKstack, output.KindUstack} {
		for _, k := range e.Key {
			if k.Kind() != kind {
				continue
			}
			for _, f := range k.Frames() {
				s.Location = append(s.Location, b.location(f, kind == output.KindKstack))
			}
		}
	}
	for i, k := range e.Key {
		name := labelName(labels, i)
		switch {
		case isStack(k):
		case k.Kind() == output.KindInt:
			if s.NumLabel == nil {
				s.NumLabel = map[string][]int64{}
			}
			s.NumLabel[name] = []int64{k.Int()}
		default:
			text, err := k.KeyText()
			if err != nil {
				return nil, err
			}
			if s.Label == nil {
				s.Label = map[string][]string{}
			}
			s.Label[name] = []string{text}
		}
	}
	return s, nil
}

// location returns the location of a frame.
func (b *builder) location(f output.Frame, kernel bool) *profile.Location {
	m := b.mapping(f, kernel)
	key := locationKey{m, f.Addr}
	if l := b.locations[key]; l != nil {
		return l
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: m, Address: f.Addr}
	if f.Symbol != "" {
		l.Line = []profile.Line{{Function: b.function(f.Symbol, f.Module)}}
	}
	b.locations[key] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// mapping returns the mapping of a frame: the kernel's, or its file's;
// nil for a user address no file holds.
func (b *builder) mapping(f output.Frame, kernel bool) *profile.Mapping {
	if kernel {
		if b.kernel == nil {
			b.kernel = b.addMapping(&profile.Mapping{File: kernelFile, BuildID: kernelBuildID(), Start: f.Addr, Limit: f.Addr + 1})
		}
		// The kernel's mapping spans the addresses the profile holds.
		b.kernel.Start = min(b.kernel.Start, f.Addr)
		b.kernel.Limit = max(b.kernel.Limit, f.Addr+1)
		return b.kernel
	}
	if f.Module == "" {
		return nil
	}
	key := mappingKey{f.Module, f.MapStart, f.MapEnd, f.MapOffset}
	if m := b.mappings[key]; m != nil {
		return m
	}
	m := b.addMapping(&profile.Mapping{File: f.Module, BuildID: f.BuildID, Start: f.MapStart, Limit: f.MapEnd, Offset: f.MapOffset})
	b.mappings[key] = m
	return m
}

// kernelLast moves the kernel's mapping after the others: pprof takes
// the first mapping for the profiled program.
func (b *builder) kernelLast() {
	if b.kernel == nil {
		return
	}
	ms := slices.DeleteFunc(b.p.Mapping, func(m *profile.Mapping) bool { return m == b.kernel })
	b.p.Mapping = append(ms, b.kernel)
	for i, m := range b.p.Mapping {
		m.ID = uint64(i + 1)
	}
}

func (b *builder) addMapping(m *profile.Mapping) *profile.Mapping {
	// The frames are symbolized already: pprof must not look again.
	m.ID, m.HasFunctions = uint64(len(b.p.Mapping)+1), true
	b.p.Mapping = append(b.p.Mapping, m)
	return m
}

// function returns the function called name in file.
func (b *builder) function(name, file string) *profile.Function {
	key := [2]string{name, file}
	if fn := b.functions[key]; fn != nil {
		return fn
	}
	fn := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name}
	b.functions[key] = fn
	b.p.Function = append(b.p.Function, fn)
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

// Write writes a profile of the maps keyed by stacks to w, gzipped.
func Write(w io.Writer, maps []*output.Map, opts Options) error {
	p, err := Profile(maps, opts)
	if err != nil {
		return err
	}
	return p.Write(w)
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
