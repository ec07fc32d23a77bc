package codegen_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := syntax.Parse("merge.bt", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			checked, err := check.Check(prog, &check.Config{Resolver: &attach.Resolver{}})
			if err != nil {
				var list syntax.ErrorList
				if errors.As(err, &list) {
					t.Fatalf("check:\n%s", list.Detail())
				}
				t.Fatal(err)
			}
			out, err := codegen.Generate(checked, &codegen.Options{
				Supports: func(m codegen.Mechanism) bool { return tt.multi && m == codegen.MechUprobeMulti },
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range out.Programs {
				desc := string(p.Mechanism)
				for _, tg := range p.Targets {
					desc += " " + tg.Func
				}
				got = append(got, desc)
			}
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
