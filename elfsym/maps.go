package elfsym

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Mapping is one line of /proc/PID/maps.
type Mapping struct {
	Start, End uint64 // the mapped address range, End exclusive
	Perms      string // e.g. "r-xp"
	Offset     uint64 // file offset mapped at Start
	Dev        string // major:minor of the file's device, hex
	Inode      uint64
	// Path is the mapped file, or a pseudo name such as "[stack]" or
	// "[vdso]", or "" for anonymous memory. A " (deleted)" suffix is
	// removed and reported in Deleted.
	Path    string
	Deleted bool
}

// File reports whether the mapping is backed by a file.
func (m Mapping) File() bool {
	return m.Inode != 0 && strings.HasPrefix(m.Path, "/")
}

// ErrNoMappings is returned by ReadMaps for a process without an
// address space: a kernel thread, or a process that is exiting or has
// exited and not been reaped, whose maps file reads empty.
var ErrNoMappings = errors.New("process has no mappings")

// ReadMaps reads the memory mappings of process pid.
func ReadMaps(pid int) ([]Mapping, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, fmt.Errorf("read maps of pid %d: %w", pid, err)
	}
	maps, err := ParseMaps(data)
	if err == nil && len(maps) == 0 {
		err = fmt.Errorf("read maps of pid %d: %w", pid, ErrNoMappings)
	}
	return maps, err
}

// ParseMaps parses the text of /proc/PID/maps.
func ParseMaps(data []byte) ([]Mapping, error) {
	var out []Mapping
	lineno := 0
	for line := range strings.Lines(string(data)) {
		lineno++
		line = strings.TrimRight(line, "\n")
		if line == "" {
			continue
		}
		m, err := parseMapsLine(line)
		if err != nil {
			return nil, fmt.Errorf("maps line %d: %w", lineno, err)
		}
		out = append(out, m)
	}
	return out, nil
}

// parseMapsLine parses
// "7f2c4e000000-7f2c4e028000 r--p 00000000 fd:00 1234   /usr/lib/libc.so.6".
func parseMapsLine(line string) (Mapping, error) {
	var m Mapping
	rest := line
	field := func() string {
		rest = strings.TrimLeft(rest, " ")
		f, r, _ := strings.Cut(rest, " ")
		rest = r
		return f
	}
	rng, perms, off, dev, inode := field(), field(), field(), field(), field()
	lo, hi, ok := strings.Cut(rng, "-")
	var err error
	if !ok || perms == "" || dev == "" || inode == "" {
		return m, fmt.Errorf("malformed line %q", line)
	}
	if m.Start, err = strconv.ParseUint(lo, 16, 64); err != nil {
		return m, fmt.Errorf("bad start in %q", line)
	}
	if m.End, err = strconv.ParseUint(hi, 16, 64); err != nil || m.End < m.Start {
		return m, fmt.Errorf("bad end in %q", line)
	}
	if m.Offset, err = strconv.ParseUint(off, 16, 64); err != nil {
		return m, fmt.Errorf("bad offset in %q", line)
	}
	if m.Inode, err = strconv.ParseUint(inode, 10, 64); err != nil {
		return m, fmt.Errorf("bad inode in %q", line)
	}
	m.Perms, m.Dev = perms, dev
	m.Path = strings.TrimLeft(rest, " ")
	if p, ok := strings.CutSuffix(m.Path, " (deleted)"); ok {
		m.Path, m.Deleted = p, true
	}
	return m, nil
}
