package elfsym

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Glob lists, sorted, the paths matching pattern as glob(3) names them,
// which is how bpftrace names the files of a wildcard uprobe or usdt
// target: the directories stay as written, "./prog*" giving "./prog"
// where filepath.Glob would clean it to "prog", and a wildcard matches a
// leading dot only when the pattern's part starts with one. A malformed
// pattern is an error; one that matches nothing gives no paths.
func Glob(pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	dir, name := filepath.Split(pattern)
	dirs := []string{dir}
	if hasMeta(dir) {
		parent := strings.TrimRight(dir, "/")
		seps := dir[len(parent):]
		matched, err := Glob(parent)
		if err != nil {
			return nil, err
		}
		dirs = dirs[:0]
		for _, m := range matched {
			if st, err := os.Stat(m); err == nil && st.IsDir() {
				dirs = append(dirs, m+seps)
			}
		}
	}
	var paths []string
	for _, d := range dirs {
		if !hasMeta(name) {
			if _, err := os.Lstat(d + name); err == nil {
				paths = append(paths, d+name)
			}
			continue
		}
		read := d
		if read == "" {
			read = "."
		}
		// A directory that cannot be read is passed over, as glob(3)
		// does unless asked to fail.
		entries, _ := os.ReadDir(read)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(name, ".") {
				continue
			}
			if ok, _ := filepath.Match(name, e.Name()); ok {
				paths = append(paths, d+e.Name())
			}
		}
	}
	slices.Sort(paths)
	return paths, nil
}

// hasMeta reports whether a path holds one of glob(3)'s special
// characters.
func hasMeta(path string) bool {
	return strings.ContainsAny(path, `*?[\`)
}

// GlobFiles lists the regular files a wildcard uprobe or usdt target
// matches, named as Glob names them; a path of process pid is read
// through /proc/PID/root as Resolve reads it. With a process, the files
// it maps that match come first, as bpftrace searches them: a pattern
// without a slash matches their base names, and "*" names those files
// alone, not the current directory. The error wraps [ErrNotFound] when
// no file matches.
func GlobFiles(pattern string, pid int) ([]string, error) {
	var files []string
	if pid > 0 {
		var err error
		if files, err = mappedFiles(pattern, pid); err != nil {
			return nil, fmt.Errorf("resolve %s: %w", pattern, err)
		}
	}
	if pid <= 0 || pattern != "*" {
		paths, err := Glob(InRoot(pattern, pid))
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", pattern, err)
		}
		for _, p := range paths {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && !slices.Contains(files, p) {
				files = append(files, p)
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("resolve %s: %w: no file matches", pattern, ErrNotFound)
	}
	return files, nil
}

// mappedFiles lists, sorted, the files process pid maps whose paths (or
// base names, for a pattern without a slash) match pattern, each once.
// A file deleted since it was mapped is read through /proc: the
// executable as /proc/PID/exe, another through its first mapping in
// /proc/PID/map_files.
func mappedFiles(pattern string, pid int) ([]string, error) {
	maps, err := ReadMaps(pid)
	if err != nil {
		return nil, err
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	exe = strings.TrimSuffix(exe, " (deleted)")
	type fileID struct {
		dev   string
		inode uint64
	}
	seen := map[fileID]bool{}
	var files []string
	for _, m := range maps {
		if !m.File() || seen[fileID{m.Dev, m.Inode}] {
			continue
		}
		name := m.Path
		if !strings.Contains(pattern, "/") {
			name = filepath.Base(name)
		}
		if ok, _ := filepath.Match(pattern, name); !ok {
			continue
		}
		seen[fileID{m.Dev, m.Inode}] = true
		p := InRoot(m.Path, pid)
		switch {
		case m.Deleted && m.Path == exe:
			p = fmt.Sprintf("/proc/%d/exe", pid)
		case m.Deleted:
			p = fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End)
		}
		files = append(files, p)
	}
	slices.Sort(files)
	return files, nil
}
