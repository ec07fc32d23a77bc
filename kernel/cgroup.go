package kernel

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// CgroupID returns the id of the cgroup whose directory is path: the
// kernfs node id the kernel puts in the directory's file handle, the
// number the cgroup builtin and bpf_get_current_cgroup_id report.
func CgroupID(path string) (uint64, error) {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0)
	if err != nil {
		return 0, fmt.Errorf("cgroup id of %s: %w", path, err)
	}
	b := h.Bytes()
	if len(b) != 8 {
		return 0, fmt.Errorf("cgroup id of %s: not a cgroup directory (a %d-byte file handle)", path, len(b))
	}
	return binary.NativeEndian.Uint64(b), nil
}

// A CgroupHierarchy is a mounted cgroup hierarchy: "unified" for cgroup2,
// otherwise the v1 controllers or name it was mounted with.
type CgroupHierarchy struct {
	Name, Mount string
}

// CgroupHierarchies lists the cgroup hierarchies mounted in this mount
// namespace, cgroup2 first and then the v1 ones by name, the order
// bpftrace 0.17's cgroup_path prints them in.
func CgroupHierarchies() ([]CgroupHierarchy, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("cgroup hierarchies: %w", err)
	}
	defer f.Close()
	var v2, v1 []CgroupHierarchy
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Fields: id parent dev root mount opts [optional...] - type source superopts.
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		mount := unescapeMount(fields[4])
		switch tail[0] {
		case "cgroup2":
			if !seen["unified"] {
				seen["unified"] = true
				v2 = append(v2, CgroupHierarchy{"unified", mount})
			}
		case "cgroup":
			var names []string
			for _, o := range strings.Split(tail[2], ",") {
				switch {
				case strings.HasPrefix(o, "name="):
					names = append(names, o[len("name="):])
				case o == "rw" || o == "ro" || strings.Contains(o, "="):
				case slices.Contains([]string{"noprefix", "xattr", "clone_children", "cpuset_v2_mode", "favordynmods"}, o):
				default:
					names = append(names, o)
				}
			}
			name := strings.Join(names, ",")
			if name != "" && !seen[name] {
				seen[name] = true
				v1 = append(v1, CgroupHierarchy{name, mount})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cgroup hierarchies: %w", err)
	}
	slices.SortFunc(v1, func(a, b CgroupHierarchy) int { return strings.Compare(a.Name, b.Name) })
	return append(v2, v1...), nil
}

// CgroupPath finds the cgroup with the given id in the hierarchies whose
// names match filter (a * and ? wildcard) and returns "name:path" for each,
// joined by commas, as bpftrace 0.17 prints cgroup_path values.
func CgroupPath(id uint64, filter string) (string, error) {
	hs, err := CgroupHierarchies()
	if err != nil {
		return "", err
	}
	var found []string
	for _, h := range hs {
		if !Match(filter, h.Name) {
			continue
		}
		if p, ok := findCgroup(h.Mount, id); ok {
			found = append(found, h.Name+":"+p)
		}
	}
	return strings.Join(found, ","), nil
}

// findCgroup walks a hierarchy for the directory of cgroup id and returns
// its path below the mount point.
func findCgroup(mount string, id uint64) (string, bool) {
	var path string
	filepath.WalkDir(mount, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if got, err := CgroupID(p); err == nil && got == id {
			rel, _ := filepath.Rel(mount, p)
			path = "/" + strings.TrimPrefix(filepath.ToSlash(rel), ".")
			return fs.SkipAll
		}
		return nil
	})
	return path, path != ""
}
