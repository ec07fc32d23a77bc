package codegen_test

import (
	"slices"
	"strings"
	"testing"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/compat"
	"kinst.dev/kinst/kernel"
)

// A kprobe and the one kretprobe on the same functions, each of one
// attach point, run as one kprobe session program in the 0.26.1 mode,
// in the kprobe's place, where the kernel has session links, and not
// where either names its probe, reads registers or probes what
// kprobe.multi cannot reach.
func TestPairSessions(t *testing.T) {
	if !kernel.HasFunc("bpf_session_is_return") {
		t.Skip("the kernel's BTF does not describe bpf_session_is_return, which a session program calls")
	}
	k := func(fn, body string) string { return "kprobe:" + fn + " " + body + "\n" }
	kr := func(fn, body string) string { return "kretprobe:" + fn + " " + body + "\n" }
	const entry = "{ @e = count(); }"
	const ret = "{ @r = sum(retval); }"
	all := []codegen.Mechanism{codegen.MechKprobeMulti, codegen.MechKprobeSession, codegen.MechFentry, codegen.MechFexit}
	tests := []struct {
		name     string
		src      string
		compat   compat.Version
		supports []codegen.Mechanism
		force    codegen.Mechanism
		want     []string
		targets  []string // Output.Targets, when the programs pair
	}{
		{"exact", k("a", entry) + kr("a", ret), compat.Current, all, "",
			[]string{"kprobe.session a"}, []string{"kprobe:a", "kretprobe:a"}},
		{"wildcard", k("vfs_*", entry) + kr("vfs_*", ret), compat.Current, all, "",
			[]string{"kprobe.session vfs_read vfs_write"},
			[]string{"kprobe:vfs_read", "kprobe:vfs_write", "kretprobe:vfs_read", "kretprobe:vfs_write"}},
		{"kretprobe first", kr("a", ret) + k("b", entry) + k("a", entry), compat.Current, all, "",
			[]string{"fentry b", "kprobe.session a"}, []string{"kprobe:b", "kprobe:a", "kretprobe:a"}},
		{"in the kprobe's place", k("a", entry) + k("b", entry) + kr("a", ret), compat.Current, all, "",
			[]string{"kprobe.session a", "fentry b"}, []string{"kprobe:a", "kretprobe:a", "kprobe:b"}},
		{"predicates", k("a", "/pid == 1/ "+entry) + kr("a", "/retval > 0/ "+ret), compat.Current, all, "",
			[]string{"kprobe.session a"}, nil},
		{"func", k("vfs_*", "{ @[func] = count(); }") + kr("vfs_*", "{ @[func] = count(); }"), compat.Current, all, "",
			[]string{"kprobe.session vfs_read vfs_write"}, nil},
		{"two kprobes", k("a", entry) + k("a", "{ @x = count(); }") + kr("a", ret), compat.Current, all, "",
			[]string{"kprobe.session a", "fentry a"}, nil},
		{"two kretprobes", k("a", entry) + kr("a", ret) + kr("a", ret), compat.Current, all, "",
			[]string{"fentry a", "fexit a", "fexit a"}, nil},
		{"other functions", k("a", entry) + kr("b", ret), compat.Current, all, "",
			[]string{"fentry a", "fexit b"}, nil},
		{"other spelling", k("vfs_*", entry) + kr("vfs_read", ret), compat.Current, all, "",
			[]string{"kprobe.multi vfs_read vfs_write", "fexit vfs_read"}, nil},
		{"two attach points", "kprobe:a,kprobe:b " + entry + "\n" + kr("a", ret), compat.Current, all, "",
			[]string{"kprobe.multi a b", "fexit a"}, nil},
		{"offset", k("a+4", entry) + kr("a", ret), compat.Current, all, "",
			[]string{"kprobe a", "fexit a"}, nil},
		{"beyond ftrace", k("notrace_a", entry) + kr("notrace_a", ret), compat.Current, all, "",
			[]string{"kprobe notrace_a", "kprobe notrace_a"}, nil},
		{"registers", k("a", `{ @[reg("ip")] = count(); }`) + kr("a", ret), compat.Current, all, "",
			[]string{"kprobe a", "fexit a"}, nil},
		{"probe named", k("a", entry) + kr("a", "{ @[probe] = count(); }"), compat.Current, all, "",
			[]string{"fentry a", "fexit a"}, nil},
		{"no session links", k("a", entry) + kr("a", ret), compat.Current, []codegen.Mechanism{codegen.MechKprobeMulti, codegen.MechFentry, codegen.MechFexit}, "",
			[]string{"fentry a", "fexit a"}, nil},
		{"no kprobe.multi", k("a", entry) + kr("a", ret), compat.Current, []codegen.Mechanism{codegen.MechKprobeSession, codegen.MechFentry, codegen.MechFexit}, "",
			[]string{"fentry a", "fexit a"}, nil},
		{"forced kprobe.multi", k("a", entry) + kr("a", ret), compat.Current, all, codegen.MechKprobeMulti,
			[]string{"kprobe.multi a", "kprobe.multi a"}, nil},
		{"0.17 mode", k("a", entry) + kr("a", ret), compat.V017, all, "",
			[]string{"fentry a", "fexit a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := generateFuncs(t, tt.src, tt.compat, tt.supports, tt.force)
			got := describePrograms(out)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("programs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if tt.targets != nil {
				var names []string
				for _, tg := range out.Targets {
					names = append(names, tg.FullName())
				}
				if !slices.Equal(names, tt.targets) {
					t.Errorf("targets %q, want %q", names, tt.targets)
				}
			}
			for _, p := range out.Programs {
				if p.Mechanism != codegen.MechKprobeSession {
					continue
				}
				// The fallback: the kprobe and the kretprobe as kprobes.
				var fb []string
				for _, q := range p.Fallback {
					fb = append(fb, string(q.Mechanism)+" "+q.Probe.Provider)
				}
				if want := []string{"kprobe kprobe", "kprobe kretprobe"}; !slices.Equal(fb, want) {
					t.Errorf("fallback %q, want %q", fb, want)
				}
				if p.Return == nil || p.Return.Provider != "kretprobe" || p.Probe.Provider != "kprobe" {
					t.Errorf("session of %v and %v", p.Probe, p.Return)
				}
			}
		})
	}
}
