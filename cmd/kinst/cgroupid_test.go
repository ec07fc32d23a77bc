package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

// cgroupid() is the id in the file handle of a cgroup2 directory,
// computed when the program is compiled: 1 for the root, the kernel's id
// for a child made for the test; a directory that does not exist is a
// located error.
func TestCgroupidBuiltin(t *testing.T) {
	t.Parallel()
	testenv.Root(t)
	hs, err := kernel.CgroupHierarchies()
	if err != nil {
		t.Fatal(err)
	}
	var unified string
	for _, h := range hs {
		if h.Name == "unified" {
			unified = h.Mount
		}
	}
	if unified == "" {
		t.Skip("no cgroup2 hierarchy mounted")
	}
	dir, err := os.MkdirTemp(unified, "kinst-cgroupid-")
	if err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}
	defer os.Remove(dir)
	id, err := kernel.CgroupID(dir)
	if err != nil {
		t.Fatal(err)
	}
	prog := fmt.Sprintf(`BEGIN { printf("%%d %%d\n", cgroupid("%s"), cgroupid("%s")); @[cgroupid("%s")] = 1; exit(); }`, unified, dir, dir)
	kinst(t, "-q", "-e", prog).want(t, 0, fmt.Sprintf("1 %d\n\n\n@[%d]: 1\n", id, id), "")
	missing := dir + "/missing"
	prog = fmt.Sprintf(`BEGIN { @ = cgroupid("%s"); }`, missing)
	kinst(t, "-e", prog).want(t, 1, "", fmt.Sprintf("-e:1:22: cgroupid(): cgroup id of %s: no such file or directory\n%s\n%s^%s\n",
		missing, prog, strings.Repeat(" ", 21), strings.Repeat("~", len(missing)+1)))
}
