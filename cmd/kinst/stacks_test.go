package main

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/internal/testenv"
)

// TestStacksInBegin: BEGIN and END run by BPF_PROG_TEST_RUN in kinst's
// own process, and their kstack is the kernel's path from kinst's bpf()
// call to the program, as both bpftrace releases print it on this
// kernel; their ustack is kinst's own.
func TestStacksInBegin(t *testing.T) {
	testenv.Root(t) // kallsyms names the program for root only
	// The program's own frame is named after its tag; its caller, the
	// offsets and the user frame depend on the kernel's and kinst's
	// builds.
	kstack := regexp.MustCompile(`^\n {8}bpf_prog_[0-9a-f]{16}_p1_BEGIN\+\d+\n {8}[a-z_]\w*\+\d+\n\n\(\n {8}\S+\n, a\)\n\n\n$`)
	for _, mode := range []string{"KINST_COMPAT=", "KINST_COMPAT=0.17"} {
		r := kinstEnv(t, []string{mode}, "-q", "-e", `BEGIN { printf("%s\n", kstack(2)); print((ustack(1), "a")); exit(); }`)
		if r.code != 0 || r.stderr != "" || !kstack.MatchString(r.stdout) {
			t.Errorf("%s: exit status %d\nstdout:\n%q\nstderr:\n%s", mode, r.code, r.stdout, r.stderr)
		}
	}
}

// TestStacksInTestProbes: test and bench probes run as XDP programs,
// which the kernel gives no stacks; the verifier's refusal says so where
// the stack is asked for.
func TestStacksInTestProbes(t *testing.T) {
	testenv.Root(t)
	r := kinstEnv(t, []string{"KINST_COMPAT="}, "--test", "-e", `test:a { @[kstack(1)] = count(); }`)
	// The kernel's own words come last: 6.1 says "unknown func", later
	// kernels that the program's type cannot use the helper.
	kernelWords := regexp.MustCompile(`\((unknown func|program of this type cannot use helper) bpf_get_stackid#27\)\n`)
	r.stderr = kernelWords.ReplaceAllString(r.stderr, "(KERNEL)\n")
	r.want(t, 1, "",
		"-e:1:12: the kernel verifier rejected probe test:a: test and bench probes run as XDP programs, which may not call bpf_get_stackid (KERNEL)\n"+
			"test:a { @[kstack(1)] = count(); }\n"+
			"           ^\n")
}

// TestRawAndBuildIDStacks: bpftrace 0.26.1's raw stack mode prints each
// address in hex, and build_id each user frame as the build ID of its
// file (the kernel's 20 bytes) and the frame's offset in that file. At a
// uprobe on the entry of kinst_greet, in the static target, the
// innermost frame is the function's address; modes come from the call,
// BPFTRACE_STACK_MODE (before the config block) or stack_mode.
func TestRawAndBuildIDStacks(t *testing.T) {
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	f, err := elfsym.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var addr uint64
	for _, s := range syms {
		if s.Name == "kinst_greet" {
			addr = s.Value
		}
	}
	var off uint64
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr < p.Vaddr+p.Memsz {
			off = addr - p.Vaddr + p.Off
		}
	}
	if addr == 0 || off == 0 || f.BuildID == "" {
		t.Fatalf("%s: kinst_greet at %#x, file offset %#x, build ID %q", bin, addr, off, f.BuildID)
	}
	raw := fmt.Sprintf("\n%x\n", addr)
	id := f.BuildID
	if len(id) < 40 {
		id += strings.Repeat("0", 40-len(id)) // the kernel's 20 bytes, padded with zeros
	}
	buildID := fmt.Sprintf("\n%s 0x%02x\n", id, off)
	for _, tt := range []struct {
		name string
		env  []string
		prog string
		want string
	}{
		{"call", nil, `uprobe:BIN:kinst_greet { printf("%s|%s", ustack(raw, 1), ustack(build_id, 1)); exit(); }`, raw + "|" + buildID + "\n\n"},
		{"env", []string{"BPFTRACE_STACK_MODE=raw"}, `config = { stack_mode = perf } uprobe:BIN:kinst_greet { printf("%s", ustack(1)); exit(); }`, raw + "\n\n"},
		{"config", nil, `config = { stack_mode = build_id } uprobe:BIN:kinst_greet { @[ustack(1)] = count(); exit(); }`, "\n\n@[" + buildID + "]: 1\n"},
	} {
		prog := strings.ReplaceAll(tt.prog, "BIN", bin)
		kinstEnv(t, append([]string{"KINST_COMPAT="}, tt.env...), "-q", "-e", prog, "-c", bin+" greet a").want(t, 0, tt.want, "")
	}
}

// TestProgramSymbols: with BPFTRACE_CACHE_USER_SYMBOLS=PER_PROGRAM, the
// frames of a process that has exited before its stack is printed
// resolve in the program the uprobe names (the static target, linked
// where it runs), as bpftrace 0.26.1 resolves them; otherwise such a
// process's frames print as addresses. The program's DWARF gives the
// frame's source line (show_debug_info).
func TestProgramSymbols(t *testing.T) {
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := target(t)
	greet := targetSymbol(t, "kinst_greet")
	t.Setenv("KINST_COMPAT", "")
	for _, tt := range []struct{ env, config, frame string }{
		{"PER_PROGRAM", "", "kinst_greet+0" + targetLine(t, 62)},
		{"", "config = { cache_user_symbols = PER_PROGRAM } ", "kinst_greet+0" + targetLine(t, 62)},
		{"per_pid", "", fmt.Sprintf("0x%x", greet.Addr)},
	} {
		t.Setenv("BPFTRACE_CACHE_USER_SYMBOLS", tt.env)
		if tt.env == "" {
			os.Unsetenv("BPFTRACE_CACHE_USER_SYMBOLS") // the config block's then
		}
		k := start(t, "-q", "-e", tt.config+"uprobe:"+bin+":kinst_greet { @[ustack(1)] = count(); }")
		k.waitAttached(t, 1)
		if out, err := exec.Command(bin, "greet", "a").CombinedOutput(); err != nil {
			t.Fatalf("%s greet a: %v\n%s", bin, err, out)
		}
		k.signal(t, syscall.SIGINT)
		k.wait(t).want(t, 0, "\n\n@[\n    "+tt.frame+"\n]: 1\n", "")
	}
}

// TestStackDebugInfo: bpftrace 0.26.1's show_debug_info, on by default,
// prints each user frame with its source file and line from DWARF and,
// before it, the functions inlined at its address, innermost first:
// "[inlined] NAME@FILE:LINE", where a frame's line is the call of the
// function inlined next. In perf mode an inlined function is a line
// "ADDR NAME (inlined)" with no source line. The limit counts
// addresses, not lines. show_debug_info = 0 or
// BPFTRACE_SHOW_DEBUG_INFO=0 print frames as before, and so does the
// 0.17 mode. The program is built with frame pointers, so that the
// kernel walks its stack; the offsets and addresses are the compiler's,
// and left out.
func TestStackDebugInfo(t *testing.T) {
	testenv.Require(t, testenv.Uprobe, testenv.Ringbuf)
	bin := gccBuild(t, "testdata/inlined.c", "-O2", "-static", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer")
	src, err := filepath.Abs("testdata/inlined.c")
	if err != nil {
		t.Fatal(err)
	}
	const probe = `usdt:BIN:kinst:inlined { printf("%s\n", ustack(2)); exit(); }`
	plain := "\n        wrapper+N\n        loop+N\n\n\n\n"
	for _, tt := range []struct {
		name string
		env  []string
		prog string
		want string
	}{
		{"default", nil, probe, "\n" +
			"        [inlined] probe@SRC:15\n" +
			"        [inlined] wrapper_inlined@SRC:20\n" +
			"        wrapper+N@SRC:25\n" +
			"        loop+N@SRC:37\n\n\n\n"},
		{"perf", []string{"BPFTRACE_STACK_MODE=perf"}, probe, "\n" +
			"\tADDR probe (inlined)\n" +
			"\tADDR wrapper_inlined (inlined)\n" +
			"\tADDR wrapper+N (BIN)\n" +
			"\tADDR loop+N (BIN)\n\n\n\n"},
		{"config off", nil, "config = { show_debug_info = 0 } " + probe, plain},
		{"env off", []string{"BPFTRACE_SHOW_DEBUG_INFO=0"}, probe, plain},
		{"0.17", []string{"KINST_COMPAT=0.17"}, probe, plain},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := kinstEnv(t, append([]string{"KINST_COMPAT="}, tt.env...), "-q", "-e", strings.ReplaceAll(tt.prog, "BIN", bin), "-c", bin)
			r.stdout = regexp.MustCompile(`\+\d+`).ReplaceAllString(r.stdout, "+N")
			r.stdout = regexp.MustCompile(`\t[0-9a-f]+ `).ReplaceAllString(r.stdout, "\tADDR ")
			want := strings.NewReplacer("SRC", src, "BIN", bin).Replace(tt.want)
			r.want(t, 0, want, "")
		})
	}
}
