package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/internal/testenv"
)

// loadModule loads the kernel module name from /lib/modules/RELEASE,
// where vmrun packs vm.GuestModules into the guests, unless it is loaded
// already. It skips the test where there is no such module file: the
// host's kernel has its own modules, or none.
func loadModule(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Stat("/sys/module/" + name + "/initstate"); err == nil {
		return // loaded; built-in modules have no initstate
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("/lib/modules", unix.ByteSliceToString(uts.Release[:]))
	var file string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && (d.Name() == name+".ko" || d.Name() == name+".ko.xz") {
			file = path
			return filepath.SkipAll
		}
		return nil
	})
	if file == "" {
		t.Skipf("no %s module under %s to load (vmrun packs one into the guests)", name, dir)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags := 0
	if strings.HasSuffix(file, ".xz") {
		flags = unix.MODULE_INIT_COMPRESSED_FILE // the kernel decompresses it
	}
	if err := unix.FinitModule(int(f.Fd()), "", flags); err != nil && !errors.Is(err, unix.EEXIST) {
		t.Fatalf("load %s: %v", file, err)
	}
}

// Probes on a module's function: kprobe, kretprobe and, where the kernel
// allows trampolines, fentry and fexit through the module's BTF, which
// also types the arguments. binfmt_misc's bm_init_fs_context runs once
// for each fsopen("binfmt_misc"): the workload makes 7, and returns 0.
func TestModuleFunctions(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Kprobe, testenv.Kretprobe, testenv.Ringbuf)
	loadModule(t, "binfmt_misc")
	w := workload(t)
	kinst(t, "-l", "kprobe:binfmt_misc:bm_init_fs_context").want(t, 0, "kprobe:binfmt_misc:bm_init_fs_context\n", "")
	kinst(t, "-q", "-e", `kprobe:binfmt_misc:bm_init_fs_context /pid == cpid/ { @k = count(); }
		kretprobe:binfmt_misc:bm_init_fs_context /pid == cpid/ { @kr[retval] = count(); }`,
		"-c", w+" fsopen 7 binfmt_misc").want(t, 0, "\n\n@k: 7\n@kr[0]: 7\n", "")
	kinst(t, "-q", "-e", "kprobe:nosuchmodule:bm_init_fs_context { }").want(t, 1, "",
		"-e:1:1: kernel function bm_init_fs_context is not in module nosuchmodule; kinst -l 'kprobe:nosuchmodule:*' lists the module's functions\n"+
			"kprobe:nosuchmodule:bm_init_fs_context { }\n"+
			"^"+strings.Repeat("~", len("kprobe:nosuchmodule:bm_init_fs_context")-1)+"\n")
	testenv.Require(t, testenv.Fentry, testenv.Fexit)
	kinst(t, "-q", "-e", `fentry:binfmt_misc:bm_init_fs_context /pid == cpid/ { @f[str(args->fc->fs_type->name)] = count(); }
		fexit:binfmt_misc:bm_init_fs_context /pid == cpid/ { @x[retval] = count(); }`,
		"-c", w+" fsopen 7 binfmt_misc").want(t, 0, "\n\n@f[binfmt_misc]: 7\n@x[0]: 7\n", "")
}
