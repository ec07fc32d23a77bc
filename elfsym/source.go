package elfsym

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Source is where an address lies in the program's source, as DWARF
// tells it: the line of the function the symbol table names and, when
// the address is in code the compiler inlined there, the functions
// inlined, as bpftrace 0.26.1 prints them with show_debug_info.
type Source struct {
	// File and Line are the location in the containing function: the
	// address's own line, or the call of the outermost inlined
	// function. File is "" when DWARF does not cover the address.
	File string
	Line int
	// Inlined are the functions inlined at the address, innermost
	// first, each with its own location: the address's line for the
	// innermost, the call of the next inner one for the others.
	Inlined []Inlined
}

// Inlined is a function inlined where an address lies, and the
// location the address is at within it.
type Inlined struct {
	Name string
	File string // "" when DWARF does not say
	Line int
}

// sourceIndex is what Source needs of a file's DWARF, read once per
// compilation unit and only for the units addresses fall in: the
// cost stays with the code stacks pass through.
type sourceIndex struct {
	mu    sync.Mutex
	err   error     // reading the units' ranges failed
	units []cuRange // nil until first use; sorted by lo
	read  map[dwarf.Offset]*cuIndex
	names map[dwarf.Offset]string // function names by DIE offset
}

// cuRange is an address range of one compilation unit.
type cuRange struct {
	lo, hi uint64
	cu     dwarf.Offset
}

// cuIndex is one compilation unit's line table and functions.
type cuIndex struct {
	err   error
	rows  []lineRow // by address; at equal addresses sequence ends first
	funcs []*scope  // functions with code, in DWARF order
}

type lineRow struct {
	addr uint64
	file string
	line int
	end  bool // the first address past a sequence
}

// scope is a function's code, out of line or inlined, and the
// functions inlined into it.
type scope struct {
	ranges   [][2]uint64
	origin   dwarf.Offset // the DIE naming the function
	inline   bool         // an inlined copy, called from callFile:callLine
	callFile string
	callLine int
	inlined  []*scope
}

func (s *scope) contains(addr uint64) bool {
	for _, r := range s.ranges {
		if r[0] <= addr && addr < r[1] {
			return true
		}
	}
	return false
}

// Source returns where the file's virtual address addr lies in the
// source: the zero Source when DWARF does not cover it.
func (d *Debug) Source(addr uint64) (Source, error) {
	x := &d.src
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.units == nil && x.err == nil {
		x.units, x.err = d.unitRanges()
	}
	if x.err != nil {
		return Source{}, x.err
	}
	i := sort.Search(len(x.units), func(i int) bool { return x.units[i].lo > addr }) - 1
	if i < 0 || addr >= x.units[i].hi {
		return Source{}, nil
	}
	cu, ok := x.read[x.units[i].cu]
	if !ok {
		cu = d.readUnit(x.units[i].cu)
		if x.read == nil {
			x.read = map[dwarf.Offset]*cuIndex{}
		}
		x.read[x.units[i].cu] = cu
	}
	if cu.err != nil {
		return Source{}, cu.err
	}
	var src Source
	if j := sort.Search(len(cu.rows), func(j int) bool { return cu.rows[j].addr > addr }) - 1; j >= 0 && !cu.rows[j].end {
		src.File, src.Line = cu.rows[j].file, cu.rows[j].line
	}
	// The functions inlined at addr, outermost first, in the function
	// holding it.
	var chain []*scope
	for scopes := cu.funcs; ; {
		k := slices.IndexFunc(scopes, func(s *scope) bool { return s.contains(addr) })
		if k < 0 {
			break
		}
		if scopes[k].inline {
			chain = append(chain, scopes[k])
		}
		scopes = scopes[k].inlined
	}
	for k := len(chain) - 1; k >= 0; k-- {
		name, err := d.funcName(chain[k].origin)
		if err != nil {
			return Source{}, err
		}
		src.Inlined = append(src.Inlined, Inlined{Name: name, File: src.File, Line: src.Line})
		src.File, src.Line = chain[k].callFile, chain[k].callLine
	}
	return src, nil
}

// unitRanges lists the address ranges of the file's compilation units.
func (d *Debug) unitRanges() ([]cuRange, error) {
	units := []cuRange{}
	for e, err := range d.compileUnits() {
		if err != nil {
			return nil, err
		}
		ranges, err := d.data.Ranges(e)
		if err != nil {
			return nil, fmt.Errorf("read DWARF of %s: %w", d.path, err)
		}
		for _, rg := range ranges {
			units = append(units, cuRange{rg[0], rg[1], e.Offset})
		}
	}
	slices.SortFunc(units, func(a, b cuRange) int { return cmpUint(a.lo, b.lo) })
	return units, nil
}

// readUnit reads the line table and the functions of the compilation
// unit at off.
func (d *Debug) readUnit(off dwarf.Offset) *cuIndex {
	cu := &cuIndex{}
	r := d.data.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil {
		cu.err = fmt.Errorf("read DWARF of %s at %#x: %w", d.path, off, orNoEntry(err))
		return cu
	}
	// DWARF 5 line tables name files relative to the compilation
	// directory, which debug/dwarf leaves relative: they are joined to
	// it, as addr2line and blazesym print them.
	compDir, _ := e.Val(dwarf.AttrCompDir).(string)
	fileName := func(f *dwarf.LineFile) string {
		switch {
		case f == nil:
			return ""
		case f.Name == "" || compDir == "" || strings.HasPrefix(f.Name, "/"):
			return f.Name
		}
		return strings.TrimSuffix(compDir, "/") + "/" + f.Name
	}
	var files []*dwarf.LineFile
	if lr, err := d.data.LineReader(e); err != nil {
		cu.err = fmt.Errorf("read the line table of %s: %w", d.path, err)
		return cu
	} else if lr != nil {
		var row dwarf.LineEntry
		for {
			err := lr.Next(&row)
			if err == io.EOF {
				break
			}
			if err != nil {
				cu.err = fmt.Errorf("read the line table of %s: %w", d.path, err)
				return cu
			}
			cu.rows = append(cu.rows, lineRow{row.Address, fileName(row.File), row.Line, row.EndSequence})
		}
		files = lr.Files()
	}
	slices.SortStableFunc(cu.rows, func(a, b lineRow) int {
		if c := cmpUint(a.addr, b.addr); c != 0 {
			return c
		}
		switch {
		case a.end && !b.end:
			return -1
		case b.end && !a.end:
			return 1
		}
		return 0
	})
	if !e.Children {
		return cu
	}
	// Walk the unit's tree, keeping for each open entry the function
	// code it lies in (nil outside any).
	open := []*scope{nil}
	for len(open) > 0 {
		e, err := r.Next()
		if err != nil {
			cu.err = fmt.Errorf("read DWARF of %s: %w", d.path, err)
			return cu
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			open = open[:len(open)-1]
			continue
		}
		in := open[len(open)-1]
		var s *scope
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			ranges, err := d.data.Ranges(e)
			if err != nil {
				cu.err = fmt.Errorf("read DWARF of %s: %w", d.path, err)
				return cu
			}
			if len(ranges) == 0 || e.Tag == dwarf.TagInlinedSubroutine && in == nil {
				break
			}
			s = &scope{ranges: ranges, origin: e.Offset, inline: e.Tag == dwarf.TagInlinedSubroutine}
			if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
				s.origin = o
			}
			if e.Tag == dwarf.TagSubprogram {
				cu.funcs = append(cu.funcs, s)
				break
			}
			if i, ok := e.Val(dwarf.AttrCallFile).(int64); ok && i >= 0 && i < int64(len(files)) {
				s.callFile = fileName(files[i])
			}
			line, _ := e.Val(dwarf.AttrCallLine).(int64)
			s.callLine = int(line)
			in.inlined = append(in.inlined, s)
		case dwarf.TagLexDwarfBlock, dwarf.TagNamespace:
			// Blocks and namespaces hold functions without being one.
			if e.Children {
				open = append(open, in)
			}
			continue
		}
		switch {
		case !e.Children:
		case s == nil:
			r.SkipChildren()
		default:
			open = append(open, s)
		}
	}
	return cu
}

// funcName returns the name of the function whose DIE is at off,
// following the DIEs an inlined or out-of-line copy refers to.
func (d *Debug) funcName(off dwarf.Offset) (string, error) {
	x := &d.src
	if name, ok := x.names[off]; ok {
		return name, nil
	}
	name, at := "", off
	r := d.data.Reader()
	// A chain of references ends within a few steps; the bound keeps a
	// malformed file's loop from hanging the lookup.
	for range 8 {
		r.Seek(at)
		e, err := r.Next()
		if err != nil || e == nil {
			return "", fmt.Errorf("read DWARF of %s at %#x: %w", d.path, at, orNoEntry(err))
		}
		if n, ok := e.Val(dwarf.AttrName).(string); ok {
			name = n
			break
		}
		next, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
		if !ok {
			if next, ok = e.Val(dwarf.AttrSpecification).(dwarf.Offset); !ok {
				break
			}
		}
		at = next
	}
	if x.names == nil {
		x.names = map[dwarf.Offset]string{}
	}
	x.names[off] = name
	return name, nil
}

// orNoEntry is err, or for a reader that found nothing where an entry
// should be, an error saying so.
func orNoEntry(err error) error {
	if err == nil {
		return errors.New("no entry")
	}
	return err
}
