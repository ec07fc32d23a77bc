package kernel_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinst.dev/kinst/kernel"
)

// The cgroup v2 root's id is 1 in every kernel; a child's id is what the
// child's file handle holds, and cgroup_path finds the child by it.
func TestCgroupPath(t *testing.T) {
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
	if hs[0].Name != "unified" {
		t.Errorf("first hierarchy %q; bpftrace lists cgroup2 (unified) first", hs[0].Name)
	}
	root, err := kernel.CgroupID(unified)
	if err != nil {
		t.Fatal(err)
	}
	if root != 1 {
		t.Errorf("cgroup id of the cgroup2 root %s: %d, want 1", unified, root)
	}
	if got, err := kernel.CgroupPath(1, "unified"); err != nil || got != "unified:/" {
		t.Errorf(`CgroupPath(1, "unified") = %q, %v; want "unified:/"`, got, err)
	}
	dir, err := os.MkdirTemp(unified, "kinst-test-")
	if err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}
	defer os.Remove(dir)
	id, err := kernel.CgroupID(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "unified:/" + filepath.Base(dir)
	if got, err := kernel.CgroupPath(id, "uni*"); err != nil || got != want {
		t.Errorf("CgroupPath(%d, \"uni*\") = %q, %v; want %q", id, got, err, want)
	}
	if got, _ := kernel.CgroupPath(id, "cpu"); strings.Contains(got, "unified") {
		t.Errorf("CgroupPath(%d, \"cpu\") = %q; the filter should leave out unified", id, got)
	}
	if _, err := kernel.CgroupID(filepath.Join(dir, "missing")); err == nil {
		t.Error("CgroupID of a missing directory succeeded")
	}
}
