package elfsym

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNotFound is returned when a uprobe target names no file.
var ErrNotFound = errors.New("no such binary or library")

// libDirs are searched for a library the ld.so cache does not list.
var libDirs = []string{
	"/lib64", "/usr/lib64",
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib", "/usr/lib", "/usr/local/lib",
}

// Resolve finds the file a uprobe target names, as bpftrace does:
//
//   - a path (anything with a '/') names itself;
//   - a library name ("libc", "libc.so.6", anything starting "lib" or
//     containing ".so") is looked for among the files process pid has
//     mapped (when pid > 0), then in the ld.so cache, then in the usual
//     library directories;
//   - any other name is a program looked for on $PATH.
//
// Paths of process pid (given, or of libraries it maps) are read through
// /proc/PID/root when it runs in another mount namespace, a container's,
// where the same path may name another file or none.
//
// The error wraps [ErrNotFound] when nothing matches.
func Resolve(target string, pid int) (string, error) {
	if target == "" {
		return "", fmt.Errorf("resolve uprobe target: %w: empty name", ErrNotFound)
	}
	if strings.Contains(target, "/") {
		target = InRoot(target, pid)
		st, err := os.Stat(target)
		if err != nil {
			return "", fmt.Errorf("resolve %s: %w: %w", target, ErrNotFound, err)
		}
		if !st.Mode().IsRegular() {
			return "", fmt.Errorf("resolve %s: %w: not a regular file", target, ErrNotFound)
		}
		return target, nil
	}
	if isLibraryName(target) {
		if pid > 0 {
			if p, ok := mappedLibrary(target, pid); ok {
				return p, nil
			}
		}
		if p, ok := cachedLibrary(target); ok {
			return p, nil
		}
		if p, ok := dirLibrary(target); ok {
			return p, nil
		}
		return "", fmt.Errorf("resolve %s: %w: not in the ld.so cache or %s", target, ErrNotFound, strings.Join(libDirs, ", "))
	}
	p, err := exec.LookPath(target)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w: not a program on $PATH", target, ErrNotFound)
	}
	return p, nil
}

func isLibraryName(name string) bool {
	return strings.HasPrefix(name, "lib") || strings.Contains(name, ".so")
}

// libraryRank says how well a library file's base name answers name: 0
// not at all, 3 exactly ("libc.so.6"), and for a bare "libc" 2 for a
// versioned soname ("libc.so.6") and 1 for another form ("libc.so", the
// development link, or "libc-2.31.so").
func libraryRank(name, base string) int {
	switch {
	case base == name:
		return 3
	case strings.Contains(name, ".so"):
		return 0
	case strings.HasPrefix(base, name+".so."):
		return 2
	case base == name+".so":
		return 1
	}
	rest, ok := strings.CutPrefix(base, name+"-")
	if ok && strings.HasSuffix(rest, ".so") {
		return 1
	}
	return 0
}

// mappedLibrary looks for the library among the files pid has mapped,
// which is the copy the process really runs.
func mappedLibrary(name string, pid int) (string, bool) {
	maps, err := ReadMaps(pid)
	if err != nil {
		return "", false
	}
	for _, m := range maps {
		if m.File() && libraryRank(name, filepath.Base(m.Path)) > 0 {
			return InRoot(m.Path, pid), true
		}
	}
	return "", false
}

// InRoot returns the path by which kinst reaches the file process pid
// calls path: path itself when the process shares kinst's mount
// namespace (or pid is 0), else path under /proc/PID/root, as bpftrace
// names it. Relative paths and paths into /proc are left alone.
func InRoot(path string, pid int) string {
	if pid <= 0 || !filepath.IsAbs(path) || strings.HasPrefix(path, "/proc/") {
		return path
	}
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return path
	}
	other, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil || other == self {
		return path
	}
	return fmt.Sprintf("/proc/%d/root%s", pid, path)
}

// cachedLibrary looks the library up in /etc/ld.so.cache, preferring an
// exact soname, then a versioned one (libc.so.6) over the development
// link (libc.so).
func cachedLibrary(name string) (string, bool) {
	entries, err := loadLDCache()
	if err != nil {
		return "", false
	}
	best, bestRank := "", 0
	for _, e := range entries {
		if !e.native() {
			continue
		}
		if rank := libraryRank(name, e.Name); rank > bestRank {
			best, bestRank = e.Path, rank
		}
	}
	return best, best != ""
}

// dirLibrary searches the usual library directories for the best-ranked
// ELF file of the name; "libc.so" is often a linker script, not ELF.
func dirLibrary(name string) (string, bool) {
	for _, dir := range libDirs {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		var found []string
		for _, e := range ents {
			if libraryRank(name, e.Name()) > 0 {
				found = append(found, e.Name())
			}
		}
		slices.SortFunc(found, func(a, b string) int {
			if c := libraryRank(name, b) - libraryRank(name, a); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		for _, f := range found {
			if p := filepath.Join(dir, f); isELF(p) {
				return p, true
			}
		}
	}
	return "", false
}

func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && string(magic) == elf.ELFMAG
}
