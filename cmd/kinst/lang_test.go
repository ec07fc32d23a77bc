package main

import (
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// langCase is a program run in the default mode (bpftrace 0.26.1) and
// in the 0.17 mode, with the exact stdout each gives; v017 is "" where
// the two agree.
type langCase struct {
	name, prog  string
	want, v017  string
	args        []string
	code        int
	stderr      string // in the default mode
	stderr017   string
	skipCompat  bool // the 0.17 mode is not run
	defaultOnly bool
}

func runLangCases(t *testing.T, cases []langCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{"-q"}, tc.args...), "-e", tc.prog)
			kinstEnv(t, []string{"KINST_COMPAT="}, args...).want(t, tc.code, tc.want, tc.stderr)
			if tc.defaultOnly {
				return
			}
			want, stderr := tc.v017, tc.stderr017
			if want == "" {
				want, stderr = tc.want, tc.stderr
			}
			kinstEnv(t, []string{"KINST_COMPAT=0.17"}, args...).want(t, tc.code, want, stderr)
		})
	}
}

// TestMapFunctions: delete in its 0.26 forms, has_key and len.
func TestMapFunctions(t *testing.T) {
	testenv.Root(t)
	runLangCases(t, []langCase{
		{name: "delete key", prog: `begin { @m[1] = 2; @m[2] = 3; $ok = delete(@m, 1); print($ok); print(delete(@m, 1)); print(len(@m)); exit(); }`,
			want: "true\nfalse\n1\n\n\n@m[2]: 3\n", v017: "1\n0\n1\n\n\n@m[2]: 3\n"},
		{name: "delete scalar", prog: `begin { @s = 5; print(delete(@s)); $v = @s; print($v); @s = @s + 1; exit(); }`,
			want: "true\n0\n\n\n@s: 1\n", v017: "1\n0\n\n\n@s: 1\n"},
		{name: "delete tuple key", prog: `begin { @m[1, "a"] = 1; @m[2, "b"] = 2; if (delete(@m, (1, "a"))) { printf("deleted\n"); } exit(); }`,
			want: "deleted\n\n\n@m[2, b]: 2\n"},
		{name: "delete element", prog: `begin { @m[1] = 1; @m[2] = 2; delete(@m[1]); exit(); }`,
			want: "\n\n@m[2]: 2\n"},
		{name: "has_key", prog: `begin { @m[1, "a"] = 1; print((has_key(@m, (1, "a")), has_key(@m, (1, "b")))); $k = (1, "a"); printf("%d\n", has_key(@m, $k)); exit(); }`,
			want: "(true, false)\n1\n\n\n@m[1, a]: 1\n", v017: "(1, 0)\n1\n\n\n@m[1, a]: 1\n"},
		{name: "len", prog: `begin { print(len(@m)); @m[1] = 1; @m[2] = 1; @c[1] = count(); print(len(@m) + len(@c)); delete(@m, 2); print(len(@m)); exit(); }`,
			want: "0\n3\n1\n\n\n@c[1]: 1\n@m[1]: 1\n"},
	})
	// 0.17's delete of several elements at once: a warning in the default mode.
	const several = `begin { @a[1] = 1; @b[1] = 1; @a[2] = 2; @b[2] = 2; delete(@a[1], @b[1]); exit(); }`
	kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", several).want(t, 0, "\n\n@a[2]: 2\n@b[2]: 2\n",
		"-e:1:53: warning: delete() of several elements is bpftrace 0.17's form: delete them one by one, as in delete(@name, key)\n"+
			"begin { @a[1] = 1; @b[1] = 1; @a[2] = 2; @b[2] = 2; delete(@a[1], @b[1]); exit(); }\n"+
			"                                                    ^~~~~~~~~~~~~~~~~~~~\n")
	kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", several).want(t, 0, "\n\n@a[2]: 2\n@b[2]: 2\n", "")
}
