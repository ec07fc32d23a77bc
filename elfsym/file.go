package elfsym

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"kinst.dev/kinst/internal/spell"
	"kinst.dev/kinst/kernel"
)

// ErrNoSymbol is returned when a file has no function of a given name.
var ErrNoSymbol = errors.New("no such function")

// Symbol is one function in an ELF file.
type Symbol struct {
	Name string
	Addr uint64 // the symbol's value: its virtual address in the file
	Size uint64
	// Offset is where Addr lies in the file: what a uprobe attaches at.
	Offset uint64
	bind   elf.SymBind
}

// File holds the function symbols of one ELF file and the layout needed
// to move between addresses and file offsets.
type File struct {
	Path string
	// DebugPath names the separate debug file that supplied symbols
	// the file itself lacks, "" when none was used.
	DebugPath string
	// BuildID is the file's GNU build ID in hex, "" when it has none.
	BuildID string
	// Class and Machine are the ELF header's: a library loads only
	// libraries of its own.
	Class   elf.Class
	Machine elf.Machine
	// Soname is a shared library's DT_SONAME, "" for a program.
	Soname string
	// Needed lists the libraries the file loads (DT_NEEDED), in order.
	Needed []string
	// Entry is the ELF header's entry point, the address a program
	// starts at; 0 for a file without one.
	Entry uint64
	// Fixed is set for a position-dependent executable (ET_EXEC), which
	// every process loads at the addresses it was linked at.
	Fixed  bool
	loads  []elf.ProgHeader // PT_LOAD segments
	byName []Symbol         // sorted by name, then preference
	byAddr []Symbol         // sorted by address, then preference
	maxEnd []uint64         // maxEnd[i]: highest end of byAddr[:i+1]
	debug  *fileDebug       // the DWARF Source reads, opened on first use
}

// fileDebug is a File's DWARF, opened once: from the path the file was
// opened through, else from its name (a /proc alias goes with its
// process). d is nil for a file without DWARF.
type fileDebug struct {
	once     sync.Once
	openPath string
	d        *Debug
}

// Source returns where the virtual address addr lies in the file's
// source, from its DWARF or its separate debug file's, read on first
// use; the zero Source for a file without DWARF or an address it does
// not cover.
func (f *File) Source(addr uint64) (Source, error) {
	f.debug.once.Do(func() {
		d, err := openDebug(f.debug.openPath, f.Path)
		if err != nil && !errors.Is(err, ErrNoDebugInfo) && f.debug.openPath != f.Path {
			d, err = openDebug(f.Path, f.Path)
		}
		if err == nil {
			f.debug.d = d
		}
	})
	if f.debug.d == nil {
		return Source{}, nil
	}
	return f.debug.d.Source(addr)
}

// debugRoot is where distributions install separate debug files.
var debugRoot = "/usr/lib/debug"

// debugDirs are the folders --debuginfo adds, searched before the usual
// places; a relative one is taken from the traced file's folder.
var debugDirs []string

// AddDebugDirs adds folders to search for separate debug files, as
// bpftrace's --debuginfo does: a relative folder is taken from the
// traced file's folder. A file is matched by its build ID, else by the
// name and CRC .gnu_debuglink records. It is meant for a command's
// start, before any file is opened.
func AddDebugDirs(dirs ...string) {
	for _, d := range dirs {
		// bpftrace's "+" asks for the CRC check kinst always makes.
		if d = strings.TrimPrefix(d, "+"); d != "" {
			debugDirs = append(debugDirs, d)
		}
	}
}

// Open reads the function symbols of the ELF file at path: .symtab and
// .dynsym, plus the .symtab of its separate debug file when the file
// itself has no .symtab.
func Open(path string) (*File, error) {
	return open(path, path)
}

// open reads the ELF file at openPath, which may be a /proc alias, and
// names it path, whose directory is where .gnu_debuglink points.
func open(openPath, path string) (*File, error) {
	ef, err := openELF(openPath, path)
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	f := &File{Path: path, BuildID: buildID(ef), Class: ef.Class, Machine: ef.Machine, Entry: ef.Entry, Fixed: ef.Type == elf.ET_EXEC,
		debug: &fileDebug{openPath: openPath}}
	// A file without a dynamic section has neither; that is no error.
	if names, err := ef.DynString(elf.DT_SONAME); err == nil && len(names) > 0 {
		f.Soname = names[0]
	}
	f.Needed, _ = ef.ImportedLibraries()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			f.loads = append(f.loads, p.ProgHeader)
		}
	}
	var syms []Symbol
	symtab, err := ef.Symbols()
	switch {
	case err == nil:
		syms = f.functions(syms, symtab)
	case !errors.Is(err, elf.ErrNoSymbols):
		return nil, fmt.Errorf("read symbols of %s: %w", path, err)
	}
	dynsym, err := ef.DynamicSymbols()
	switch {
	case err == nil:
		syms = f.functions(syms, dynsym)
	case !errors.Is(err, elf.ErrNoSymbols):
		return nil, fmt.Errorf("read dynamic symbols of %s: %w", path, err)
	}
	if symtab == nil {
		if dbg := findDebugFile(ef, path); dbg != "" {
			if debugSyms, err := readSymtab(dbg); err == nil {
				f.DebugPath = dbg
				syms = f.functions(syms, debugSyms)
			}
		}
	}
	f.index(syms)
	return f, nil
}

func readSymtab(path string) ([]elf.Symbol, error) {
	ef, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer ef.Close()
	return ef.Symbols()
}

// functions appends the defined functions among syms that lie in a
// loaded segment.
func (f *File) functions(out []Symbol, syms []elf.Symbol) []Symbol {
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		if typ != elf.STT_FUNC && typ != elf.STT_GNU_IFUNC || s.Section == elf.SHN_UNDEF || s.Value == 0 || s.Name == "" {
			continue
		}
		off, ok := f.AddrOffset(s.Value)
		if !ok {
			continue
		}
		out = append(out, Symbol{Name: s.Name, Addr: s.Value, Size: s.Size, Offset: off, bind: elf.ST_BIND(s.Info)})
	}
	return out
}

// Exported reports whether the symbol is global or weak: one the dynamic
// linker binds other files' references to.
func (s Symbol) Exported() bool { return s.bind == elf.STB_GLOBAL || s.bind == elf.STB_WEAK }

// prefer orders symbols that share an address or a name: exported before
// weak before local, then the plainer name (fewer leading underscores,
// shorter), so that libc's getppid wins over __getppid and __GI_getppid.
func prefer(a, b Symbol) int {
	rank := func(b elf.SymBind) int {
		switch b {
		case elf.STB_GLOBAL:
			return 0
		case elf.STB_WEAK:
			return 1
		}
		return 2
	}
	if c := rank(a.bind) - rank(b.bind); c != 0 {
		return c
	}
	under := func(s string) int { return len(s) - len(strings.TrimLeft(s, "_")) }
	if c := under(a.Name) - under(b.Name); c != 0 {
		return c
	}
	if c := len(a.Name) - len(b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

func (f *File) index(syms []Symbol) {
	// The same symbol often appears in both .symtab and .dynsym.
	slices.SortFunc(syms, func(a, b Symbol) int {
		if a.Addr != b.Addr {
			return cmpUint(a.Addr, b.Addr)
		}
		if c := prefer(a, b); c != 0 {
			return c
		}
		return cmpUint(a.Size, b.Size)
	})
	syms = slices.CompactFunc(syms, func(a, b Symbol) bool { return a.Name == b.Name && a.Addr == b.Addr })
	f.byAddr = syms
	f.maxEnd = make([]uint64, len(syms))
	var end uint64
	for i, s := range syms {
		end = max(end, s.Addr+s.Size)
		f.maxEnd[i] = end
	}
	f.byName = slices.Clone(syms)
	slices.SortStableFunc(f.byName, func(a, b Symbol) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return prefer(a, b)
	})
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Symbols returns the functions whose names match the glob pattern (see
// [kernel.Match]), one per name, sorted by name, as `bpftrace -l` lists
// them. Aliases (malloc and __libc_malloc) are separate entries with the
// same Offset. Like bpftrace it leaves out the fragments GCC's partial
// inlining splits off (work.part.0), which are not whole functions;
// Lookup and Symbolize still know them.
func (f *File) Symbols(pattern string) []Symbol {
	var out []Symbol
	for i, s := range f.byName {
		if i > 0 && f.byName[i-1].Name == s.Name || strings.Contains(s.Name, ".part.") {
			continue
		}
		if kernel.Match(pattern, s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// Find is Lookup without the error, which costs a search for a near
// name: for asking after names the file may well lack.
func (f *File) Find(name string) (Symbol, bool) {
	i, ok := slices.BinarySearchFunc(f.byName, name, func(s Symbol, name string) int { return strings.Compare(s.Name, name) })
	if !ok {
		return Symbol{}, false
	}
	return f.byName[i], true
}

// Lookup returns the function of the given name. When several share the
// name (static functions of different source files), the exported one or
// the first by address is returned. The error wraps [ErrNoSymbol] and
// suggests a near name when there is one.
func (f *File) Lookup(name string) (Symbol, error) {
	if s, ok := f.Find(name); ok {
		return s, nil
	}
	err := fmt.Errorf("%w: %s in %s", ErrNoSymbol, name, f.Path)
	if near := f.Nearest(name); near != "" {
		err = fmt.Errorf("%w (did you mean %s?)", err, near)
	}
	return Symbol{}, err
}

// SymbolOffset returns the file offset of name+off, the spelling
// uprobe:path:name+off attaches at. off must lie inside the function.
func (f *File) SymbolOffset(name string, off uint64) (uint64, error) {
	s, err := f.Lookup(name)
	if err != nil {
		return 0, err
	}
	if s.Size > 0 && off >= s.Size {
		return 0, fmt.Errorf("%s+%d in %s: offset outside the function bounds ('%s' size is %d)", name, off, f.Path, name, s.Size)
	}
	return s.Offset + off, nil
}

// AddrOffset converts a virtual address of the file to its file offset,
// through the PT_LOAD segment that holds it.
func (f *File) AddrOffset(addr uint64) (uint64, bool) {
	for _, p := range f.loads {
		if addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// OffsetAddr converts a file offset to the virtual address it is loaded at.
func (f *File) OffsetAddr(off uint64) (uint64, bool) {
	for _, p := range f.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// Symbolize returns the function whose body contains the virtual address
// addr and addr's offset into it. Symbols of size zero contain nothing.
func (f *File) Symbolize(addr uint64) (Symbol, uint64, bool) {
	i := sort.Search(len(f.byAddr), func(i int) bool { return f.byAddr[i].Addr > addr }) - 1
	// Walk back over groups of symbols sharing an address while any
	// symbol so far could still reach addr; nested symbols make the
	// nearest start not always the right one.
	for i >= 0 && f.maxEnd[i] > addr {
		start := f.byAddr[i].Addr
		j := i
		for j > 0 && f.byAddr[j-1].Addr == start {
			j--
		}
		for k := j; k <= i; k++ {
			if addr < f.byAddr[k].Addr+f.byAddr[k].Size {
				return f.byAddr[k], addr - start, true
			}
		}
		i = j - 1
	}
	return Symbol{}, 0, false
}

// Nearest returns the function name closest to name by edit distance,
// if any is close enough to be a likely typo, or "".
func (f *File) Nearest(name string) string {
	best, bestDist := "", len(name)/3+1
	for i, s := range f.byName {
		if i > 0 && f.byName[i-1].Name == s.Name {
			continue
		}
		if d := spell.Distance(name, s.Name, bestDist); d < bestDist {
			best, bestDist = s.Name, d
		}
	}
	return best
}

// findDebugFile locates the separate debug file of ef: by build ID under
// /usr/lib/debug/.build-id, else by .gnu_debuglink next to the file, in
// its .debug directory or under /usr/lib/debug, checking the link's CRC.
func findDebugFile(ef *elf.File, path string) string {
	dir := filepath.Dir(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		dir = filepath.Dir(real)
	}
	roots := make([]string, 0, len(debugDirs)+1)
	for _, d := range debugDirs {
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		roots = append(roots, d)
	}
	roots = append(roots, debugRoot)
	if id := buildID(ef); id != "" && len(id) > 2 {
		for _, root := range roots {
			p := filepath.Join(root, ".build-id", id[:2], id[2:]+".debug")
			if isFile(p) {
				return p
			}
		}
	}
	name, crc, ok := debugLink(ef)
	if !ok {
		return ""
	}
	var try []string
	for _, root := range roots[:len(debugDirs)] {
		try = append(try, filepath.Join(root, name))
	}
	try = append(try, filepath.Join(dir, name), filepath.Join(dir, ".debug", name), filepath.Join(debugRoot, dir, name))
	for _, p := range try {
		if p != path && isFile(p) && fileCRC(p) == crc {
			return p
		}
	}
	return ""
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// buildID returns the hex GNU build ID of ef, or "".
func buildID(ef *elf.File) string {
	sec := ef.Section(".note.gnu.build-id")
	if sec == nil {
		return ""
	}
	data, err := sec.Data()
	if err != nil {
		return ""
	}
	return NoteBuildID(data, ef.ByteOrder)
}

// NoteBuildID returns the hex GNU build ID among ELF notes, as in a
// .note.gnu.build-id section or /sys/kernel/notes, or "".
func NoteBuildID(data []byte, order binary.ByteOrder) string {
	for len(data) >= 12 {
		namesz, descsz, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
		nameEnd := 12 + align4(namesz)
		descEnd := nameEnd + align4(descsz)
		if descEnd > uint64(len(data)) {
			return ""
		}
		if typ == ntGNUBuildID && bytes.Equal(bytes.TrimRight(data[12:12+namesz], "\x00"), []byte("GNU")) {
			return hex.EncodeToString(data[nameEnd : nameEnd+uint64(descsz)])
		}
		data = data[descEnd:]
	}
	return ""
}

// ntGNUBuildID is the note type of a GNU build ID (NT_GNU_BUILD_ID), which
// debug/elf does not name.
const ntGNUBuildID = 3

func align4(n uint32) uint64 { return (uint64(n) + 3) &^ 3 }

// debugLink returns the file name and CRC .gnu_debuglink records.
func debugLink(ef *elf.File) (name string, crc uint32, ok bool) {
	sec := ef.Section(".gnu_debuglink")
	if sec == nil {
		return "", 0, false
	}
	data, err := sec.Data()
	if err != nil {
		return "", 0, false
	}
	end := bytes.IndexByte(data, 0)
	if end <= 0 {
		return "", 0, false
	}
	crcAt := int(align4(uint32(end + 1)))
	if crcAt+4 > len(data) {
		return "", 0, false
	}
	return string(data[:end]), ef.ByteOrder.Uint32(data[crcAt:]), true
}

func fileCRC(path string) uint32 {
	fh, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer fh.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, fh); err != nil {
		return 0
	}
	return h.Sum32()
}
