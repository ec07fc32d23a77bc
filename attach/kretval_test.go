package attach

import (
	"testing"

	"kinst.dev/kinst/check"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// oneTarget resolves every attach point to one target.
type oneTarget struct{ t *check.Target }

func (r oneTarget) Resolve(*syntax.AttachPoint) ([]*check.Target, error) {
	return []*check.Target{r.t}, nil
}

// A kretprobe's retval is a uint64 unless cast, as in bpftrace, even on a
// function the kernel's BTF says returns a pointer; fexit's is typed.
// Only the checker runs: the host forbids kprobes.
func TestKretprobeRetvalUntyped(t *testing.T) {
	if _, err := kernel.FuncProto("d_alloc"); err != nil {
		t.Skipf("no BTF for d_alloc: %v", err)
	}
	progs := []string{
		"kretprobe:d_alloc { @s[retval] = count(); @h = hist(retval); $x = retval; $x = 0; }",
		"kretprobe:d_alloc { @n = ((struct dentry *)retval)->d_flags; }",
	}
	tgt, err := (&Resolver{}).kernelFuncTarget("kretprobe", kernel.Func{Name: "d_alloc"}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range progs {
		prog, err := syntax.Parse("t", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := check.Check(prog, &check.Config{Resolver: oneTarget{tgt}, Kernel: Kernel{}}); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	fexit, err := (&Resolver{}).kernelFuncTarget("fexit", kernel.Func{Name: "d_alloc"}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if fexit.Ret == nil || fexit.Ret.String() != "struct dentry *" {
		t.Errorf("fexit's retval is %v, want struct dentry *", fexit.Ret)
	}
}
