package codegen_test

import (
	"testing"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/syntax"
)

// TestEventsSize: the ring buffer is resident memory, so a program whose
// records are few and come once each gets a small one; a probe that
// fires repeatedly, or a loop, may send any number and gets the default.
func TestEventsSize(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		asked     int // Options.EventsSize
		want      int
	}{
		{"no records", `interval:s:1 { @[comm] = count(); }`, 0, 16 << 10},
		{"begin and end", `BEGIN { @ = 1; printf("%s\n", comm); } END { print(@); exit(); }`, 0, 16 << 10},
		{"repeating probe", `interval:s:1 { printf("x\n"); }`, 0, codegen.DefaultEventsSize},
		{"loop in begin", `BEGIN { $i = 0; while ($i < 3) { printf("%d\n", $i); $i++; } }`, 0, codegen.DefaultEventsSize},
		{"range loop in end", `END { for ($i : 0..3) { printf("%d\n", $i); } }`, 0, codegen.DefaultEventsSize},
		{"unrolled", `BEGIN { unroll (3) { printf("%d\n", 1); } }`, 0, 16 << 10},
		// 40 records of 1 KiB strings take 40 KiB: the buffer holds
		// twice that, rounded up to a power of two.
		{"large records", `BEGIN { unroll (40) { printf("%s\n", str(0)); } }`, 0, 128 << 10},
		{"asked for", `interval:s:1 { @ = count(); }`, 1 << 20, 1 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := syntax.Parse("events.bt", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			checked, err := check.Check(prog, &check.Config{Resolver: &attach.Resolver{}, StrLen: 1024})
			if err != nil {
				t.Fatal(err)
			}
			out, err := codegen.Generate(checked, &codegen.Options{EventsSize: tt.asked, HasLoop: func() bool { return true }})
			if err != nil {
				t.Fatal(err)
			}
			got := int(out.Collection.Maps[codegen.EventsMap].MaxEntries)
			if got != tt.want || out.EventsSize != tt.want {
				t.Errorf("ring buffer of %d bytes (Output.EventsSize %d), want %d", got, out.EventsSize, tt.want)
			}
		})
	}
}
