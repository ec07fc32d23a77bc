package main

import (
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestUprobeSourceLine: uprobe:BINARY@FILE:LINE probes the first
// instruction the DWARF line table gives the line, as bpftrace 0.26.1
// does: the line of kinst_add's opening brace is its entry, so the probe fires once
// per call and func names it. A line without code, a column no
// statement starts at, a source file the program was not built from and
// a return probe are refused.
func TestUprobeSourceLine(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Ringbuf)
	bin := target(t)
	kinst(t, "-q", "-e", "uprobe:"+bin+"@target.c:56 { @[func] = count(); }", "-c", bin+" add 3").want(t, 0, "\n\n@[kinst_add]: 3\n", "")
	kinst(t, "-q", "-e", "uprobe:"+bin+"@testdata/target.c:56 { @ = count(); }", "-c", bin+" add 2").want(t, 0, "\n\n@: 2\n", "")
	for _, tc := range []struct{ point, err string }{
		{"uprobe:" + bin + "@target.c:54", "unable to map 'target.c:54' to an address in " + bin + ": no code at that source location"},
		{"uprobe:" + bin + "@target.c:56:999", "unable to map 'target.c:56:999' to an address in " + bin + ": no code at that source location"},
		{"uprobe:" + bin + "@other.c:55", "no compilation unit of " + bin + " has a source file other.c: no code at that source location"},
		{"uprobe:" + bin + "@target.c:x", "invalid line number \"x\" in uprobe:" + bin + "@target.c:x"},
		{"uretprobe:" + bin + "@target.c:55", "uretprobe cannot take a source location: a return probe fires on the function's return"},
	} {
		src := tc.point + " { }"
		kinst(t, "-e", src).want(t, 1, "", "-e:1:1: "+tc.err+"\n"+src+"\n^"+strings.Repeat("~", len(tc.point)-1)+"\n")
	}
}
