package main

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A footprint is what an executable brings onto a disk: its own size
// and that of the shared libraries it loads.
type footprint struct {
	size int64    // the executable and its libraries, in bytes
	libs []string // resolved paths of the shared libraries and loader
}

// staticFootprint sizes an executable that must need no loader: an ELF
// file without a PT_INTERP segment or DT_NEEDED entries. It reports what
// it needs instead of an error, so that the table can show it.
func staticFootprint(path string) (footprint, error) {
	st, err := os.Stat(path)
	if err != nil {
		return footprint{}, err
	}
	f, err := elf.Open(path)
	if err != nil {
		return footprint{}, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	fp := footprint{size: st.Size()}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp, err := io.ReadAll(p.Open())
			if err != nil {
				return footprint{}, fmt.Errorf("read %s: interpreter: %w", path, err)
			}
			fp.libs = append(fp.libs, strings.TrimRight(string(interp), "\x00"))
		}
	}
	needed, err := f.DynString(elf.DT_NEEDED)
	if err != nil {
		return footprint{}, fmt.Errorf("read %s: dynamic section: %w", path, err)
	}
	fp.libs = append(fp.libs, needed...)
	return fp, nil
}

// dynamicFootprint sizes an executable with every shared library ldd
// says it loads, each file counted once whatever links lead to it.
func dynamicFootprint(path string) (footprint, error) {
	out, err := exec.Command("ldd", path).Output()
	if err != nil {
		return footprint{}, fmt.Errorf("ldd %s: %w", path, err)
	}
	libs, err := parseLdd(string(out))
	if err != nil {
		return footprint{}, fmt.Errorf("ldd %s: %w", path, err)
	}
	seen := map[string]bool{}
	var fp footprint
	for _, p := range append([]string{path}, libs...) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return footprint{}, err
		}
		if seen[real] {
			continue
		}
		seen[real] = true
		st, err := os.Stat(real)
		if err != nil {
			return footprint{}, err
		}
		fp.size += st.Size()
		if p != path {
			fp.libs = append(fp.libs, real)
		}
	}
	return fp, nil
}

// parseLdd takes the library paths from ldd's output: "name => path
// (address)" lines and the loader's "path (address)" line. The vDSO has
// no file and is left out.
func parseLdd(out string) ([]string, error) {
	var libs []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if _, after, ok := strings.Cut(line, "=>"); ok {
			line = strings.TrimSpace(after)
		}
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "not":
			return nil, fmt.Errorf("missing library: %s", strings.TrimSpace(sc.Text()))
		case len(f) > 0 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, f[0])
		}
	}
	return libs, sc.Err()
}
