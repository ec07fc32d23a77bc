package main

import (
	"debug/elf"
	"testing"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

// TestUaddrPIE: in the default mode uaddr() in a position-independent
// program is where the process loaded the variable, as in bpftrace
// 0.26.1, which moves the symbol's address by the start of the
// program's lowest mapping (Linux 6.7's task_vma iterator): reading
// through it reads kinst_sum, the sum of kinst_add's first two results
// before its third call.
func TestUaddrPIE(t *testing.T) {
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	if _, err := kernel.TaskVMAIter(); err != nil {
		t.Skip(err)
	}
	bin := gccBuild(t, "testdata/target.c", "-O1")
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	typ := ef.Type
	ef.Close()
	if typ != elf.ET_DYN {
		t.Skipf("gcc built %s as %v, not position-independent", bin, typ)
	}
	prog := "uprobe:" + bin + `:kinst_add /arg0 == 3/ { printf("%d\n", *uaddr("kinst_sum")); exit(); }`
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog, "-c", bin+" add 3").want(t, 0, "-3\n\n\n", "")
}
