package elfsym

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotELF matches the error of opening a file that is no ELF object
// at all, such as a script or a text file named as a uprobe's target.
var ErrNotELF = errors.New("not an ELF file")

// OpenELF opens the ELF file at path. Its errors name the file; one that
// is not ELF at all is said to be so in words, where debug/elf reports
// the bytes it found in place of the magic number.
func OpenELF(path string) (*elf.File, error) {
	return openELF(path, path)
}

// openELF opens the ELF file at openPath, which may be a /proc alias,
// naming it path in its errors.
func openELF(openPath, path string) (*elf.File, error) {
	ef, err := elf.Open(openPath)
	if err == nil {
		return ef, nil
	}
	var fe *elf.FormatError
	if (errors.As(err, &fe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && !hasELFMagic(openPath) {
		return nil, fmt.Errorf("%s is %w", path, ErrNotELF)
	}
	return nil, fmt.Errorf("open %s: %w", path, err)
}

// hasELFMagic reports whether the file at path begins as ELF files do.
func hasELFMagic(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, len(elf.ELFMAG))
	_, err = io.ReadFull(f, magic)
	return err == nil && bytes.Equal(magic, []byte(elf.ELFMAG))
}
