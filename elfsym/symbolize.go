package elfsym

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
)

// Frame is a user-space address and what it resolved to.
type Frame struct {
	Addr   uint64
	Symbol string // "" when no function contains Addr
	Offset uint64 // Addr's offset into Symbol
	Path   string // the file mapped at Addr, "" when none is
	// MapStart, MapEnd and MapOffset are the mapping holding Addr: its
	// address range and the file offset mapped at MapStart.
	MapStart, MapEnd, MapOffset uint64
	// BuildID is the GNU build ID of Path, "" when unknown.
	BuildID string
}

// Sym formats the frame as bpftrace's usym() does: the function name, or
// the address in hex ("0x7f3a2b4c5d6e") when it is unknown.
func (f Frame) Sym() string {
	if f.Symbol == "" {
		return "0x" + strconv.FormatUint(f.Addr, 16)
	}
	return f.Symbol
}

// SymOff formats the frame as a bpftrace ustack line: "main+14" with a
// decimal offset, or the address in hex.
func (f Frame) SymOff() string {
	if f.Symbol == "" {
		return "0x" + strconv.FormatUint(f.Addr, 16)
	}
	return f.Symbol + "+" + strconv.FormatUint(f.Offset, 10)
}

// Symbolizer resolves addresses in running processes to functions. It
// caches each process's mappings and each file's symbols, so that a process
// that has exited since its first lookup still resolves; a process never
// seen alive resolves to hex addresses, as in bpftrace. It is safe for
// concurrent use.
type Symbolizer struct {
	mu    sync.Mutex
	procs map[int][]Mapping
	files map[fileKey]*File // nil entries remember files that failed to open
}

type fileKey struct {
	dev   string
	inode uint64
	path  string
}

// NewSymbolizer returns an empty Symbolizer.
func NewSymbolizer() *Symbolizer {
	return &Symbolizer{procs: map[int][]Mapping{}, files: map[fileKey]*File{}}
}

// Frame resolves addr in process pid.
func (s *Symbolizer) Frame(pid int, addr uint64) Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	fr, _, _ := s.frame(pid, addr)
	return fr
}

// Source returns where addr lies in the source of process pid's
// program or library: see [File.Source].
func (s *Symbolizer) Source(pid int, addr uint64) (Source, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, f, vaddr := s.frame(pid, addr); f != nil {
		return f.Source(vaddr)
	}
	return Source{}, nil
}

// frame resolves addr in process pid, and returns the file holding it
// and addr's virtual address in that file, or a nil file.
func (s *Symbolizer) frame(pid int, addr uint64) (Frame, *File, uint64) {
	m, ok := s.mapping(pid, addr)
	if !ok || !m.File() {
		return Frame{Addr: addr}, nil, 0
	}
	fr := Frame{Addr: addr, Path: m.Path, MapStart: m.Start, MapEnd: m.End, MapOffset: m.Offset}
	f := s.file(pid, m)
	if f == nil {
		return fr, nil, 0
	}
	fr.BuildID = f.BuildID
	vaddr, ok := f.OffsetAddr(addr - m.Start + m.Offset)
	if !ok {
		return fr, nil, 0
	}
	if sym, off, ok := f.Symbolize(vaddr); ok {
		fr.Symbol, fr.Offset = sym.Name, off
	}
	return fr, f, vaddr
}

// ProgramFrame resolves addr in the program file at path as the
// process running it would have it, without the process: for one gone
// before its mappings were read, as bpftrace 0.26.1's PER_PROGRAM
// symbol cache resolves frames from the probed program's symbol table.
// Only a position-dependent executable is where it was linked in every
// process; in any other file, or outside the file's segments, addr
// resolves to nothing.
func (s *Symbolizer) ProgramFrame(path string, addr uint64) Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	fr, _ := s.programFrame(path, addr)
	return fr
}

// ProgramSource returns where addr lies in the source of the program
// file at path, as ProgramFrame resolves it: see [File.Source].
func (s *Symbolizer) ProgramSource(path string, addr uint64) (Source, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, f := s.programFrame(path, addr); f != nil {
		return f.Source(addr)
	}
	return Source{}, nil
}

// programFrame is ProgramFrame, and the program's File when it holds
// addr.
func (s *Symbolizer) programFrame(path string, addr uint64) (Frame, *File) {
	key := fileKey{path: path}
	f, ok := s.files[key]
	if !ok {
		f, _ = Open(path)
		s.files[key] = f
	}
	if f == nil || !f.Fixed {
		return Frame{Addr: addr}, nil
	}
	for _, p := range f.loads {
		if addr < p.Vaddr || addr >= p.Vaddr+p.Memsz {
			continue
		}
		fr := Frame{Addr: addr, Path: f.Path, MapStart: p.Vaddr, MapEnd: p.Vaddr + p.Memsz, MapOffset: p.Off, BuildID: f.BuildID}
		if sym, off, ok := f.Symbolize(addr); ok {
			fr.Symbol, fr.Offset = sym.Name, off
		}
		return fr, f
	}
	return Frame{Addr: addr}, nil
}

// Remember reads the mappings of process pid now, so that its addresses
// still resolve once it has exited.
func (s *Symbolizer) Remember(pid int) error {
	maps, err := ReadMaps(pid)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.procs[pid] = maps
	s.mu.Unlock()
	return nil
}

// mapping finds the mapping of pid holding addr, reading the process's
// maps on first use and again when addr is outside every cached mapping
// (the process may have loaded a library since).
func (s *Symbolizer) mapping(pid int, addr uint64) (Mapping, bool) {
	maps, cached := s.procs[pid]
	if m, ok := findMapping(maps, addr); ok {
		return m, true
	}
	fresh, err := ReadMaps(pid)
	if err != nil {
		if !cached {
			s.procs[pid] = nil
		}
		return Mapping{}, false
	}
	s.procs[pid] = fresh
	return findMapping(fresh, addr)
}

func findMapping(maps []Mapping, addr uint64) (Mapping, bool) {
	i := sort.Search(len(maps), func(i int) bool { return maps[i].End > addr })
	if i < len(maps) && maps[i].Start <= addr {
		return maps[i], true
	}
	return Mapping{}, false
}

// file returns the symbols of the file behind mapping m of pid. It opens
// the file through /proc so that it finds the very file mapped, even one
// since deleted or inside another mount namespace.
func (s *Symbolizer) file(pid int, m Mapping) *File {
	key := fileKey{m.Dev, m.Inode, m.Path}
	if f, ok := s.files[key]; ok {
		return f
	}
	var f *File
	for _, p := range []string{
		fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End),
		fmt.Sprintf("/proc/%d/root%s", pid, m.Path),
		m.Path,
	} {
		var err error
		if f, err = open(p, m.Path); err == nil {
			break
		}
	}
	s.files[key] = f
	return f
}
