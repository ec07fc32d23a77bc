package codegen_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/syntax"
)

// Uprobe blocks of one body on one file share a program, and so one
// uprobe.multi link, where the kernel has uprobe.multi; blocks of other
// bodies, of the other direction, or naming a function the group
// already probes keep their own.
func TestMergeUprobes(t *testing.T) {
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skipf("no C library to resolve uprobes in: %v", err)
	}
	u := func(fn, body string) string { return "uprobe:" + libc + ":" + fn + " " + body + "\n" }
	const count = "{ @[probe] = count(); }"
	tests := []struct {
		name  string
		src   string
		multi bool // the kernel has uprobe.multi
		want  []string
	}{
		{"same body", u("getpid", count) + u("getppid", count) + u("getuid", count), true,
			[]string{"uprobe.multi getpid getppid getuid"}},
		{"no uprobe.multi", u("getpid", count) + u("getppid", count), false,
			[]string{"uprobe getpid", "uprobe getppid"}},
		{"other bodies", u("getpid", count) + u("getppid", "{ @x = count(); }") + u("getuid", count), true,
			[]string{"uprobe.multi getpid getuid", "uprobe getppid"}},
		{"predicates differ", u("getpid", "/pid == 1/ "+count) + u("getppid", "/pid == 2/ "+count), true,
			[]string{"uprobe getpid", "uprobe getppid"}},
		{"uretprobe apart", u("getpid", count) + "uretprobe:" + libc + ":getppid " + count + "\n" + u("getuid", count), true,
			[]string{"uprobe.multi getpid getuid", "uprobe getppid"}},
		// Both blocks on getpid must fire: the second starts a group.
		{"same function twice", u("getpid", count) + u("getpid", count) + u("getppid", count), true,
			[]string{"uprobe.multi getpid getppid", "uprobe getpid"}},
		{"wildcard joins", u("getpp*", count) + u("getuid", count), true,
			[]string{"uprobe.multi getppid getuid"}},
		// getppid's blocks run in the source's order: count's second
		// block cannot move ahead of @x's.
		{"order on a function", u("getpid", count) + u("getppid", "{ @x = count(); }") + u("getppid", count) + u("getuid", count), true,
			[]string{"uprobe.multi getpid getuid", "uprobe getppid", "uprobe getppid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := generate(t, tt.src, &check.Config{Resolver: &attach.Resolver{}}, &codegen.Options{
				Supports: func(m codegen.Mechanism) bool { return tt.multi && m == codegen.MechUprobeMulti },
			})
			got := describePrograms(out)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("programs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			// Every block's target is still counted, once.
			if n, want := len(out.Targets), strings.Count(tt.src, "\n"); n != want {
				t.Errorf("%d targets, want %d", n, want)
			}
		})
	}
}

// kernelFuncs resolves kprobes as a kernel with BTF would, without one:
// every function is typed and returns int, but for long_* ones, which
// return long; notrace_* ones are outside ftrace's list; vfs_* matches
// vfs_read and vfs_write.
type kernelFuncs struct{}

func (kernelFuncs) Resolve(ap *syntax.AttachPoint) ([]*check.Target, error) {
	if ap.Provider != "kprobe" && ap.Provider != "kretprobe" || len(ap.Parts) != 1 {
		return nil, fmt.Errorf("kernelFuncs resolves kprobe:FUNCTION, not %s", ap.Raw)
	}
	names := []string{ap.Parts[0]}
	if ap.Parts[0] == "vfs_*" {
		names = []string{"vfs_read", "vfs_write"}
	}
	var targets []*check.Target
	for _, name := range names {
		fn, _, _ := strings.Cut(name, "+")
		t := &check.Target{Provider: ap.Provider, Name: name, Func: fn, Typed: true, NumArgs: 1,
			NoFtrace: strings.HasPrefix(fn, "notrace_")}
		if ap.Provider == "kprobe" && fn == name {
			t.Args = &check.Type{Kind: check.Record, Name: "struct " + fn + "_args", Size: 8,
				Fields: []*check.Field{{Name: "x", Type: check.TInt64}}}
		}
		if ap.Provider == "kretprobe" {
			t.Ret = check.TInt32
			if strings.HasPrefix(fn, "long_") {
				t.Ret = check.TInt64
			}
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// Kprobe blocks of one body share a program, and so one kprobe.multi
// link, where the kernel has kprobe.multi; blocks whose code depends on
// their function, or which need a kprobe of their own, keep their own
// program, as do all blocks on a kernel without kprobe.multi.
func TestMergeKprobes(t *testing.T) {
	k := func(fn, body string) string { return "kprobe:" + fn + " " + body + "\n" }
	kr := func(fn, body string) string { return "kretprobe:" + fn + " " + body + "\n" }
	const count = "{ @[probe] = count(); }"
	const ret = "{ @[func] = sum(retval); }"
	all := []codegen.Mechanism{codegen.MechKprobeMulti, codegen.MechFentry, codegen.MechFexit}
	tests := []struct {
		name     string
		src      string
		supports []codegen.Mechanism
		force    codegen.Mechanism
		want     []string
	}{
		{"same body", k("a", count) + k("b", count) + k("c", count), all, "",
			[]string{"kprobe.multi a b c"}},
		// 6.1: the blocks keep a trampoline each, or a kprobe each
		// where the kernel refuses trampolines.
		{"no kprobe.multi", k("a", count) + k("b", count), []codegen.Mechanism{codegen.MechFentry}, "",
			[]string{"fentry a", "fentry b"}},
		{"no kprobe.multi nor fentry", k("a", count) + k("b", count), nil, "",
			[]string{"kprobe a", "kprobe b"}},
		{"other bodies", k("a", count) + k("b", "{ @x = count(); }") + k("c", count), all, "",
			[]string{"kprobe.multi a c", "fentry b"}},
		{"predicates differ", k("a", "/pid == 1/ "+count) + k("b", "/pid == 2/ "+count), all, "",
			[]string{"fentry a", "fentry b"}},
		{"kretprobe apart", k("a", count) + kr("b", count) + k("c", count), all, "",
			[]string{"kprobe.multi a c", "fexit b"}},
		{"same function twice", k("a", count) + k("a", count) + k("b", count), all, "",
			[]string{"kprobe.multi a b", "fentry a"}},
		{"wildcard joins", k("vfs_*", count) + k("c", count), all, "",
			[]string{"kprobe.multi vfs_read vfs_write c"}},
		{"order on a function", k("a", count) + k("b", "{ @x = count(); }") + k("b", count) + k("c", count) + k("d", count), all, "",
			[]string{"kprobe.multi a c d", "fentry b", "fentry b"}},
		{"registers", k("a", `{ @[reg("ip")] = count(); }`) + k("b", `{ @[reg("ip")] = count(); }`), all, "",
			[]string{"kprobe a", "kprobe b"}},
		{"typed args", k("a", "{ @ = sum(args->x); }") + k("b", "{ @ = sum(args->x); }"), all, "",
			[]string{"fentry a", "fentry b"}},
		{"untyped args", k("a", "{ @ = sum(arg0); }") + k("b", "{ @ = sum(arg0); }"), all, "",
			[]string{"kprobe.multi a b"}},
		{"offset", k("a+4", count) + k("b", count) + k("c", count), all, "",
			[]string{"kprobe a", "kprobe.multi b c"}},
		{"beyond ftrace", k("notrace_a", count) + k("b", count) + k("c", count), all, "",
			[]string{"kprobe notrace_a", "kprobe.multi b c"}},
		{"retval of one type", kr("a", ret) + kr("b", ret) + kr("long_c", ret), all, "",
			[]string{"kprobe.multi a b", "fexit long_c"}},
		{"retval unread", kr("a", count) + kr("long_b", count), all, "",
			[]string{"kprobe.multi a long_b"}},
		{"forced fentry", k("a", count) + k("b", count), all, codegen.MechFentry,
			[]string{"fentry a", "fentry b"}},
		{"forced kprobe", k("a", count) + k("b", count), all, codegen.MechKprobe,
			[]string{"kprobe a", "kprobe b"}},
		{"forced kprobe.multi", k("a", count) + k("b", count), all, codegen.MechKprobeMulti,
			[]string{"kprobe.multi a b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := generateFuncs(t, tt.src, compat.Current, tt.supports, tt.force)
			got := describePrograms(out)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("programs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			// Every block's target is still counted, once.
			wantTargets := strings.Count(tt.src, "\n") + strings.Count(tt.src, "vfs_*")
			if n := len(out.Targets); n != wantTargets {
				t.Errorf("%d targets, want %d", n, wantTargets)
			}
		})
	}
}

// describePrograms lists each program as its mechanism and its targets'
// functions.
// generateFuncs compiles src against the fake kernel's functions with
// the mechanisms supports names, and --attach force.
func generateFuncs(t *testing.T, src string, v compat.Version, supports []codegen.Mechanism, force codegen.Mechanism) *codegen.Output {
	t.Helper()
	return generate(t, src, &check.Config{Resolver: kernelFuncs{}, Compat: v}, &codegen.Options{
		Supports: func(m codegen.Mechanism) bool { return slices.Contains(supports, m) },
		Force:    force,
	})
}

// generate parses, checks and compiles src, failing the test on errors.
func generate(t *testing.T, src string, conf *check.Config, opts *codegen.Options) *codegen.Output {
	t.Helper()
	prog, err := syntax.Parse("test.bt", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	checked, err := check.Check(prog, conf)
	if err != nil {
		var list syntax.ErrorList
		if errors.As(err, &list) {
			t.Fatalf("check:\n%s", list.Detail())
		}
		t.Fatal(err)
	}
	out, err := codegen.Generate(checked, opts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func describePrograms(out *codegen.Output) []string {
	var got []string
	for _, p := range out.Programs {
		desc := string(p.Mechanism)
		for _, tg := range p.Targets {
			desc += " " + tg.Func
		}
		got = append(got, desc)
	}
	return got
}
