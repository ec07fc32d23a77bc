package syntax

import "testing"

func TestResolveGetopt(t *testing.T) {
	const prog = `begin { print((getopt("aa", 20), getopt("bb", -1), getopt("cc", true), getopt("dd"), getopt("ee", "hello", "a greeting"))); }`
	tests := []struct {
		name string
		src  string
		opts []string
		want string // the printed program, or the error
	}{
		{"defaults", prog, nil,
			"begin\n{\n\tprint((20, -1, true, false, \"hello\"));\n}\n"},
		{"given", prog, []string{"--dd", "--aa=0x10", "--bb=-10", "--cc=False", "--ee=bye"},
			"begin\n{\n\tprint((16, -10, false, true, \"bye\"));\n}\n"},
		{"inside a macro", `macro verbose() { getopt("verbose") } begin { if (verbose) { exit(); } }`, []string{"--verbose=1"},
			"begin\n{\n\tif (true) {\n\t\texit();\n\t}\n}\n"},
		{"in a let's value", `begin { let $d = getopt("depth", 35) - 1; }`, []string{"--depth=3"},
			"begin\n{\n\tlet $d = 3 - 1;\n}\n"},
		{"not an integer", prog, []string{"--aa=False"},
			"program command line option --aa invalid integer (value: False)"},
		{"not a boolean", prog, []string{"--cc=yes"},
			"program command line option --cc invalid boolean (value: yes): give true, false, 1 or 0"},
		{"unknown", prog, []string{"--zz", "--aa=1", "--yy=2"},
			"unexpected program command line options: --zz --yy; the program takes: --aa, --bb, --cc, --dd, --ee: a greeting"},
		{"a default that is no literal", `begin { print(getopt("aa", $1)); }`, nil,
			"t.bt:1:28: getopt's default is a boolean, integer or string literal: it gives the option's type"},
		{"a name that is no string", `begin { print(getopt(aa)); }`, nil,
			"t.bt:1:22: getopt's first argument is the option's name, a string literal"},
	}
	for _, tt := range tests {
		prog, err := Parse("t.bt", []byte(tt.src))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if err := Expand(prog, nil); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got string
		if err := ResolveGetopt(prog, tt.opts); err != nil {
			got = err.Error()
		} else {
			got = String(prog)
		}
		if got != tt.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}
