package main

import (
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestGetopt: in the default mode the arguments after the program that
// start with "--" are its named options, as bpftrace 0.26.1's
// tests/runtime/other has them; in the 0.17 mode they stay positional.
func TestGetopt(t *testing.T) {
	testenv.Root(t)
	def := []string{"KINST_COMPAT="}
	kinstEnv(t, def, "-q", "-e", `begin { print(($1, getopt("aa", 10), getopt("bb", -1), $2, getopt("cc", "hello"), getopt("dd") ? "dd" : "no dd", $#)); exit(); }`,
		"pos1", "--", "--aa=20", "--bb=5", "--cc=bye", "pos2", "--dd").want(t, 0, "(pos1, 20, 5, pos2, bye, dd, 2)\n\n\n", "")
	kinstEnv(t, def, "-e", `begin { print(getopt("aa", 10)); }`, "--", "--aa=False").want(t, 1, "",
		"kinst: program command line option --aa invalid integer (value: False)\n")
	kinstEnv(t, def, "-e", `begin { print(getopt("aa", 10, "AA")); }`, "--", "--bb").want(t, 1, "",
		"kinst: unexpected program command line options: --bb; the program takes: --aa: AA\n")
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", `BEGIN { printf("%s %d\n", $1, $#); exit(); }`, "--", "--bb").want(t, 0, "--bb 1\n\n\n", "")
}
