package elfsym

import (
	"debug/dwarf"
	"errors"
	"fmt"
	"io"
	"iter"
	"path/filepath"
	"strings"
)

// ErrNoLine reports a source location the line table maps to no code.
var ErrNoLine = errors.New("no code at that source location")

// LineAddr gives the address of file:line (and column col, unless 0) as
// a debugger sets a breakpoint there: in the first compilation unit whose
// line table names a file whose path ends with file, the first row at
// that line whose file is that one, so that statements of headers the
// unit includes are not taken. A file that ends two different paths is
// ambiguous, and an error.
func (d *Debug) LineAddr(file string, line, col int) (uint64, error) {
	var unit *dwarf.LineReader
	var path string
	for e, err := range d.compileUnits() {
		if err != nil {
			return 0, err
		}
		lr, err := d.data.LineReader(e)
		if err != nil || lr == nil {
			continue
		}
		for _, f := range lr.Files() {
			if f == nil || !pathEndsWith(f.Name, file) {
				continue
			}
			switch {
			case unit == nil:
				unit, path = lr, f.Name
			case f.Name != path:
				return 0, fmt.Errorf("ambiguous source file %s: %s and %s end with it", file, path, f.Name)
			}
		}
	}
	if unit == nil {
		return 0, fmt.Errorf("no compilation unit of %s has a source file %s: %w", d.path, file, ErrNoLine)
	}
	var row dwarf.LineEntry
	for {
		err := unit.Next(&row)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("read the line table of %s: %w", d.path, err)
		}
		if !row.EndSequence && row.File != nil && row.File.Name == path && row.Line == line && (col == 0 || row.Column == col) {
			return row.Address, nil
		}
	}
	loc := fmt.Sprintf("%s:%d", file, line)
	if col != 0 {
		loc += fmt.Sprintf(":%d", col)
	}
	return 0, fmt.Errorf("unable to map '%s' to an address in %s: %w", loc, d.path, ErrNoLine)
}

// compileUnits yields the entries of the file's compilation units.
func (d *Debug) compileUnits() iter.Seq2[*dwarf.Entry, error] {
	return func(yield func(*dwarf.Entry, error) bool) {
		r := d.data.Reader()
		for {
			e, err := r.Next()
			if err != nil {
				yield(nil, fmt.Errorf("read DWARF of %s: %w", d.path, err))
				return
			}
			if e == nil {
				return
			}
			if e.Children {
				r.SkipChildren()
			}
			if e.Tag == dwarf.TagCompileUnit && !yield(e, nil) {
				return
			}
		}
	}
}

// pathEndsWith reports whether path's last components are suffix's:
// "src/a.c" ends with "a.c" and "src/a.c", not with "c" or "/a.c"'s
// other spellings.
func pathEndsWith(path, suffix string) bool {
	p := strings.Split(filepath.Clean(path), "/")
	s := strings.Split(filepath.Clean(suffix), "/")
	if len(s) > len(p) {
		return false
	}
	for i := range s {
		if s[len(s)-1-i] != p[len(p)-1-i] {
			return false
		}
	}
	return true
}
