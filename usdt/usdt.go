package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"kinst.dev/kinst/elfsym"
)

// ErrNoNotes is returned by Read for a file without USDT probes.
var ErrNoNotes = errors.New("no USDT probes")

// noteType is NT_STAPSDT, the type of every note in .note.stapsdt.
const noteType = 3

// A Probe is one probe site. A probe that the program fires from several
// places (an inlined function, a macro used twice) has one Probe each.
type Probe struct {
	Provider, Name string
	// Addr is the address of the site in the file's own address space,
	// Offset where it lies in the file: what a uprobe attaches at.
	Addr, Offset uint64
	// Semaphore is the address of the probe's enabled counter, 0 when the
	// probe has none; SemaphoreOffset is its file offset, what the
	// kernel's uprobe reference counter takes.
	Semaphore, SemaphoreOffset uint64
	// ArgSpec is the operand string as the note holds it, Args its
	// decoded form.
	ArgSpec string
	Args    []Arg
}

// FullName is PROVIDER:NAME.
func (p *Probe) FullName() string { return p.Provider + ":" + p.Name }

// Read returns the USDT probes of the ELF file at path, in note order.
func Read(path string) ([]Probe, error) {
	f, err := elfsym.OpenELF(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	probes, err := probesOf(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return probes, nil
}

func probesOf(f *elf.File) ([]Probe, error) {
	sec := f.Section(".note.stapsdt")
	if sec == nil {
		return nil, ErrNoNotes
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read .note.stapsdt: %w", err)
	}
	// A prelinked file moved its sections but not the addresses the notes
	// hold; .stapsdt.base records where the base the notes assume ended up.
	var baseAddr uint64
	if b := f.Section(".stapsdt.base"); b != nil {
		baseAddr = b.Addr
	}
	var syms []elf.Symbol
	symbols := func() []elf.Symbol {
		if syms == nil {
			syms, _ = f.Symbols()
			dyn, _ := f.DynamicSymbols()
			syms = append(syms, dyn...)
		}
		return syms
	}
	order := f.ByteOrder
	var probes []Probe
	for len(data) > 0 {
		if len(data) < 12 {
			return nil, errors.New("truncated note in .note.stapsdt")
		}
		namesz, descsz, typ := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
		nameEnd := 12 + align4(uint64(namesz))
		descEnd := nameEnd + align4(uint64(descsz))
		if descEnd > uint64(len(data)) {
			return nil, errors.New("truncated note in .note.stapsdt")
		}
		name, desc := data[12:12+namesz], data[nameEnd:nameEnd+uint64(descsz)]
		data = data[descEnd:]
		if typ != noteType || string(bytes.TrimRight(name, "\x00")) != "stapsdt" {
			continue
		}
		p, noteBase, err := parseNote(desc, order)
		if err != nil {
			return nil, err
		}
		if baseAddr != 0 && noteBase != 0 {
			p.Addr += baseAddr - noteBase
			if p.Semaphore != 0 {
				p.Semaphore += baseAddr - noteBase
			}
		}
		var ok bool
		if p.Offset, ok = fileOffset(f, p.Addr); !ok {
			return nil, fmt.Errorf("probe %s at %#x is outside the file's loadable segments", p.FullName(), p.Addr)
		}
		if p.Semaphore != 0 {
			if p.SemaphoreOffset, ok = fileOffset(f, p.Semaphore); !ok {
				return nil, fmt.Errorf("semaphore of probe %s at %#x is outside the file's loadable segments", p.FullName(), p.Semaphore)
			}
		}
		if p.Args, err = ParseArgs(p.ArgSpec, p.Addr, symbols); err != nil {
			return nil, fmt.Errorf("probe %s: %w", p.FullName(), err)
		}
		probes = append(probes, p)
	}
	if len(probes) == 0 {
		return nil, ErrNoNotes
	}
	return probes, nil
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// parseNote reads a note's description: the site's address, the base the
// note assumes, the semaphore's address, then provider, name and
// argument operands as NUL-terminated strings.
func parseNote(desc []byte, order binary.ByteOrder) (Probe, uint64, error) {
	var p Probe
	if len(desc) < 24 {
		return p, 0, errors.New("truncated probe note in .note.stapsdt")
	}
	p.Addr, p.Semaphore = order.Uint64(desc), order.Uint64(desc[16:])
	base := order.Uint64(desc[8:])
	strs := bytes.SplitN(desc[24:], []byte{0}, 4)
	if len(strs) < 3 {
		return p, 0, errors.New("malformed probe note in .note.stapsdt")
	}
	p.Provider, p.Name, p.ArgSpec = string(strs[0]), string(strs[1]), string(strs[2])
	return p, base, nil
}

// fileOffset maps an address to its offset in the file through the
// PT_LOAD segment holding it.
func fileOffset(f *elf.File, addr uint64) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}
