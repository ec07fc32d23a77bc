package syntax

import (
	"fmt"
	"sort"
)

// Pos is a byte offset into a File's source plus one, so that the zero
// value means "no position".
type Pos int

// NoPos is the zero Pos.
const NoPos Pos = 0

// IsValid reports whether p denotes a place in a source.
func (p Pos) IsValid() bool { return p > 0 }

// A File is one program's source with the line table needed to turn a
// Pos into a line and column.
type File struct {
	Name  string // as shown in messages: a path, or "-e" for a one-liner
	Src   []byte
	lines []int // offset of the first byte of each line
	// spans, when a preprocessor made Src, say where each run of its
	// bytes was written, so that positions name the original files.
	spans []Span
	// expansions say which macro call each copy of a macro's body in
	// Src stands for, so that errors there name the call.
	expansions []expansion
}

// A Span says that the bytes of a preprocessed File from Off on, up to
// the next Span, were copied from Orig starting at OrigOff.
type Span struct {
	Off     int
	Orig    *File
	OrigOff int
}

// NewFile indexes src for position look-ups.
func NewFile(name string, src []byte) *File {
	f := &File{Name: name, Src: src, lines: []int{0}}
	for i, c := range src {
		if c == '\n' {
			f.lines = append(f.lines, i+1)
		}
	}
	return f
}

// NewMappedFile indexes src, the output of a preprocessor, whose bytes
// came from the files spans name. spans are sorted by Off, and the first
// starts at 0.
func NewMappedFile(name string, src []byte, spans []Span) *File {
	f := NewFile(name, src)
	f.spans = spans
	return f
}

// Origin returns the file p was written in and its Pos there: f and p
// themselves unless f was preprocessed.
func (f *File) Origin(p Pos) (*File, Pos) {
	if f.spans == nil || !p.IsValid() {
		return f, p
	}
	off := f.Offset(p)
	i := sort.Search(len(f.spans), func(i int) bool { return f.spans[i].Off > off }) - 1
	if i < 0 {
		return f, p
	}
	s := f.spans[i]
	o := s.OrigOff + off - s.Off
	if o > len(s.Orig.Src) {
		o = len(s.Orig.Src)
	}
	return s.Orig.Origin(s.Orig.Pos(o))
}

// Locate resolves p in the file it was written in, and returns that
// line's text too.
func (f *File) Locate(p Pos) (Position, string) {
	of, op := f.Origin(p)
	pos := of.Position(op)
	return pos, of.Line(pos.Line)
}

// Pos returns the Pos of byte offset off.
func (f *File) Pos(off int) Pos { return Pos(off + 1) }

// Offset returns the byte offset of p.
func (f *File) Offset(p Pos) int { return int(p) - 1 }

// Position is a Pos resolved to a line and a column, both counted from 1;
// the column counts bytes.
type Position struct {
	Filename string
	Line     int
	Column   int
}

func (p Position) String() string {
	return fmt.Sprintf("%s:%d:%d", p.Filename, p.Line, p.Column)
}

// Position resolves p, in the file it was written in when f was
// preprocessed. An invalid p gives the file name alone.
func (f *File) Position(p Pos) Position {
	if !p.IsValid() {
		return Position{Filename: f.Name}
	}
	if f.spans != nil {
		p, _ := f.Locate(p)
		return p
	}
	off := f.Offset(p)
	i := sort.Search(len(f.lines), func(i int) bool { return f.lines[i] > off }) - 1
	return Position{Filename: f.Name, Line: i + 1, Column: off - f.lines[i] + 1}
}

// Line returns the text of line n (counted from 1) without its newline;
// for a preprocessed file, of its preprocessed text.
func (f *File) Line(n int) string {
	if n < 1 || n > len(f.lines) {
		return ""
	}
	start := f.lines[n-1]
	end := len(f.Src)
	if n < len(f.lines) {
		end = f.lines[n] - 1
	}
	return string(f.Src[start:end])
}
