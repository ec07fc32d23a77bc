package pprof_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"kinst.dev/kinst/export/pprof"
	"kinst.dev/kinst/output"
)

// Two processes of the same program, one sample in the kernel under a
// system call, others in user code only.
var (
	libc    = output.Frame{Module: "/lib/libc.so.6", MapStart: 0x7f0000000000, MapEnd: 0x7f0000100000, MapOffset: 0x28000, BuildID: "aabb"}
	prog    = output.Frame{Module: "/bin/app", MapStart: 0x400000, MapEnd: 0x480000, BuildID: "ccdd"}
	burn    = frame(prog, 0x401010, "main.burn")
	mainFn  = frame(prog, 0x402020, "main.main")
	getppid = frame(libc, 0x7f0000001234, "getppid")
	kernel1 = output.Frame{Addr: 0xffffffff81000010, Symbol: "do_syscall_64"}
	kernel2 = output.Frame{Addr: 0xffffffff81000500, Symbol: "__x64_sys_getppid"}
	unknown = output.Frame{Addr: 0x1234}
)

func frame(m output.Frame, addr uint64, sym string) output.Frame {
	m.Addr, m.Symbol = addr, sym
	return m
}

func entry(pid int64, comm string, k, u []output.Frame, n uint64) output.Entry {
	return output.Entry{Key: []output.Value{
		output.Int(pid), output.String(comm),
		output.Kstack(output.StackBpftrace, k), output.Ustack(output.StackBpftrace, u),
	}, Value: output.Count(n)}
}

var samples = &output.Map{Name: "@samples", Kind: output.KindCount, Entries: []output.Entry{
	entry(10, "app", nil, []output.Frame{burn, mainFn}, 90),
	entry(11, "app", nil, []output.Frame{burn, mainFn}, 5),
	entry(10, "app", []output.Frame{kernel2, kernel1}, []output.Frame{getppid, mainFn}, 4),
	entry(12, "other", nil, []output.Frame{unknown}, 1),
}}

// describe renders a parsed profile's samples one a line: values,
// labels, then frames leaf first as function@mapping.
func describe(p *profile.Profile) string {
	var b strings.Builder
	for _, st := range p.SampleType {
		fmt.Fprintf(&b, "type %s/%s\n", st.Type, st.Unit)
	}
	for _, s := range p.Sample {
		fmt.Fprintf(&b, "%v pid=%v comm=%v:", s.Value, s.NumLabel["pid"], s.Label["comm"])
		for _, l := range s.Location {
			name := fmt.Sprintf("%#x", l.Address)
			if len(l.Line) > 0 {
				name = l.Line[0].Function.Name
			}
			file := "-"
			if l.Mapping != nil {
				file = l.Mapping.File
			}
			fmt.Fprintf(&b, " %s@%s", name, file)
		}
		b.WriteString("\n")
	}
	for _, m := range p.Mapping {
		fmt.Fprintf(&b, "mapping %s [%#x, %#x) offset %#x build %q\n", m.File, m.Start, m.Limit, m.Offset, m.BuildID)
	}
	return b.String()
}

func TestProfileRoundTrip(t *testing.T) {
	start := time.Unix(1700000000, 0)
	var buf bytes.Buffer
	err := pprof.Write(&buf, []*output.Map{{Name: "@other", Kind: output.KindCount}, samples}, pprof.Options{
		Labels: []string{"pid", "comm"}, Period: 10101010, Start: start, Duration: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel's build ID is the running kernel's: 20 bytes of SHA-1.
	kernelID := regexp.MustCompile(`(\[kernel\.kallsyms\].* build )"[0-9a-f]{40}"`)
	got := kernelID.ReplaceAllString(describe(p), `$1"KERNEL"`)
	want := `type samples/count
type cpu/nanoseconds
[90 909090900] pid=[10] comm=[app]: main.burn@/bin/app main.main@/bin/app
[5 50505050] pid=[11] comm=[app]: main.burn@/bin/app main.main@/bin/app
[4 40404040] pid=[10] comm=[app]: __x64_sys_getppid@[kernel.kallsyms] do_syscall_64@[kernel.kallsyms] getppid@/lib/libc.so.6 main.main@/bin/app
[1 10101010] pid=[12] comm=[other]: 0x1234@-
mapping /bin/app [0x400000, 0x480000) offset 0x0 build "ccdd"
mapping /lib/libc.so.6 [0x7f0000000000, 0x7f0000100000) offset 0x28000 build "aabb"
mapping [kernel.kallsyms] [0xffffffff81000010, 0xffffffff81000501) offset 0x0 build "KERNEL"
`
	if got != want {
		t.Errorf("profile:\n%s\nwant:\n%s", got, want)
	}
	if p.Period != 10101010 || p.TimeNanos != start.UnixNano() || p.DurationNanos != 3e9 {
		t.Errorf("period %d, time %d, duration %d", p.Period, p.TimeNanos, p.DurationNanos)
	}
}

func TestNoStacks(t *testing.T) {
	counts := &output.Map{Name: "@", Kind: output.KindCount, Entries: []output.Entry{{Key: []output.Value{output.String("a")}, Value: output.Count(1)}}}
	if err := pprof.Write(io.Discard, []*output.Map{counts}, pprof.Options{}); !errors.Is(err, pprof.ErrNoStacks) {
		t.Errorf("profile of a map without stacks: %v, want ErrNoStacks", err)
	}
}

func TestFolded(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.WriteFolded(&buf, samples, []int{1}); err != nil {
		t.Fatal(err)
	}
	want := "app;main.main;getppid;do_syscall_64;__x64_sys_getppid 4\n" +
		"app;main.main;main.burn 95\n" +
		"other;0x1234 1\n"
	if buf.String() != want {
		t.Errorf("folded:\n%s\nwant:\n%s", buf.String(), want)
	}
}
