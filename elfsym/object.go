package elfsym

import (
	"debug/elf"
	"errors"
	"fmt"
)

// ErrNoObject is returned when a file has no data symbol of a given name.
var ErrNoObject = errors.New("no such variable")

// Object returns the address and size of the data symbol (a variable,
// STT_OBJECT) called name in the ELF file at path, from .symtab or
// .dynsym: what bpftrace's uaddr() resolves. The address is the one in
// the file, the running address only for executables not built position
// independent.
func Object(path, name string) (addr, size uint64, err error) {
	ef, err := OpenELF(path)
	if err != nil {
		return 0, 0, fmt.Errorf("variable %s: %w", name, err)
	}
	defer ef.Close()
	for _, read := range []func() ([]elf.Symbol, error){ef.Symbols, ef.DynamicSymbols} {
		syms, _ := read() // a file may lack either table
		for _, s := range syms {
			if s.Name == name && elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Section != elf.SHN_UNDEF {
				return s.Value, s.Size, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("%s in %s: %w", name, path, ErrNoObject)
}
