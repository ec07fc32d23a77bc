package difftest

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      Program
	}{
		{
			name: "description only",
			src:  "// plain arithmetic\nBEGIN { exit(); }\n",
			want: Program{Covers: "plain arithmetic"},
		},
		{
			name: "every directive",
			src: "// tracepoint counts\n" +
				"// run: -c \"{workload} getppid 5\" -f json\n" +
				"// args: 5 'two words' \"a\\\"b\"\n" +
				"// env: BPFTRACE_STRLEN=16\n" +
				"tracepoint:syscalls:sys_enter_getppid /pid == cpid/ { @ = count(); }\n",
			want: Program{
				Covers:  "tracepoint counts",
				Options: []string{"-c", "{workload} getppid 5", "-f", "json"},
				Args:    []string{"5", "two words", `a"b`},
				Env:     []string{"BPFTRACE_STRLEN=16"},
			},
		},
		{
			name: "unsafe takes no value",
			src:  "// system()\n// run: --unsafe -f json\nBEGIN { system(\"true\"); exit(); }\n",
			want: Program{Covers: "system()", Options: []string{"--unsafe", "-f", "json"}},
		},
		{
			name: "prose and repeated directives",
			src: "//covers: more than one line\n" +
				"// of description\n" +
				"// args: 1\n" +
				"// args: 2\n" +
				"BEGIN { exit(); }\n" +
				"// args: 3 (not in the header)\n",
			want: Program{Covers: "covers: more than one line", Args: []string{"1", "2"}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse("x", []byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Name = "x"
			if fmt.Sprint(*p) != fmt.Sprint(tt.want) {
				t.Errorf("Parse = %+v, want %+v", *p, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		src, err string
	}{
		{"BEGIN { exit(); }\n", "x:1: bad corpus header: no leading comment saying what the program covers"},
		{"//\nBEGIN {}\n", "x:1: bad corpus header: the first line must say what the program covers"},
		{"// run: -f json\n", "x:1: bad corpus header: the first line must say what the program covers"},
		{"// d\n// run: -v\n", `x:2: bad corpus header: run: option "-v": only -c CMD, -f text|json, -I DIR and --unsafe are allowed`},
		{"// d\n// run: -f yaml\n", "x:2: bad corpus header: run: -f yaml: want text or json"},
		{"// d\n// run: -c\n", "x:2: bad corpus header: run: option -c needs a value"},
		{"// d\n// args: 'open\n", "x:2: bad corpus header: args: unterminated ' quote"},
		{"// d\n// args: trailing\\\n", "x:2: bad corpus header: args: backslash at the end"},
		{"// d\n// args:\n", "x:2: bad corpus header: args: nothing after the colon"},
		{"// d\n// env: HOME=/\n", `x:2: bad corpus header: env: "HOME=/": want BPFTRACE_NAME=value`},
	} {
		_, err := Parse("x", []byte(tt.src))
		if err == nil || err.Error() != tt.err {
			t.Errorf("Parse(%q) error = %v, want %s", tt.src, err, tt.err)
			continue
		}
		if !errors.Is(err, ErrHeader) {
			t.Errorf("Parse(%q) error %v is not ErrHeader", tt.src, err)
		}
	}
}

func TestSplitWords(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  a  b\tc ", []string{"a", "b", "c"}},
		{`"a b" 'c d'`, []string{"a b", "c d"}},
		{`x"y z"w`, []string{"xy zw"}},
		{`'' ""`, []string{"", ""}},
		{`a\ b 'it\s' "q\"q"`, []string{"a b", `it\s`, `q"q`}},
	} {
		got, err := splitWords(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestArgv(t *testing.T) {
	p := &Program{
		Name:    "p",
		Path:    "testdata/p.bt",
		Options: []string{"-c", "{workload} write 3 {size}", "-f", "json"},
		Args:    []string{"-5", "{testdata}/f"},
	}
	got, err := p.Argv(map[string]string{"workload": "/bin/w", "size": "8", "testdata": "/td"})
	want := []string{"-c", "/bin/w write 3 8", "-f", "json", "--", "testdata/p.bt", "-5", "/td/f"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Argv = %q, %v; want %q", got, err, want)
	}
	_, err = p.Argv(map[string]string{"workload": "/bin/w"})
	if !errors.Is(err, ErrPlaceholder) || err.Error() != "p: unknown placeholder: {size}, {testdata}" {
		t.Errorf("Argv without values: error = %v, want p: unknown placeholder: {size}, {testdata}", err)
	}
	if !p.JSON() {
		t.Errorf("JSON() = false for %q", p.Options)
	}
	p.Options = []string{"-c", "-f json", "-f", "text"}
	if p.JSON() {
		t.Errorf("JSON() = true for %q", p.Options)
	}
}

func TestStripAttach(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Attaching 1 probe...\nhi\n", "hi\n"},
		{"Attaching 12 probes...\n\n\n@: 1\n", "\n\n@: 1\n"},
		{"{\"type\": \"attached_probes\", \"data\": {\"probes\": 2}}\n{\"type\": \"printf\", \"data\": \"x\"}\n",
			"{\"type\": \"printf\", \"data\": \"x\"}\n"},
		{"first\nAttaching 1 probe...\nAttaching 1 probe...\n", "first\nAttaching 1 probe...\n"},
		{"say Attaching 1 probe...\n", "say Attaching 1 probe...\n"},
		{"Attaching 1 probe...", "Attaching 1 probe..."},
		{"", ""},
	} {
		if got := string(StripAttach([]byte(tt.in))); got != tt.want {
			t.Errorf("StripAttach(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDiff(t *testing.T) {
	for _, tt := range []struct{ want, got, diff string }{
		{"a\nb\n", "a\nb\n", ""},
		{"", "", ""},
		{"a\nb\nc\n", "a\nB\nc\n", "  a\n- b\n+ B\n  c\n"},
		{"a\n", "a\nextra\n", "  a\n+ extra\n"},
		{"gone\nkept\n", "kept\n", "- gone\n  kept\n"},
		{"x\n", "x", "- x\n+ x (no newline at end)\n"},
		{"@: 1\n", "@: 1 \n", "- @: 1\n+ \"@: 1 \"\n"},
		{"tab\tin\n", "", "- \"tab\\tin\"\n"},
	} {
		if got := Diff([]byte(tt.want), []byte(tt.got)); got != tt.diff {
			t.Errorf("Diff(%q, %q) =\n%s\nwant\n%s", tt.want, tt.got, got, tt.diff)
		}
	}
}

func ExampleDiff() {
	bpftrace := "@[1]: 10\n@[2]: 20\n"
	kinst := "@[2]: 20\n@[1]: 10\n"
	fmt.Print(Diff([]byte(bpftrace), []byte(kinst)))
	// Output:
	// - @[1]: 10
	//   @[2]: 20
	// + @[1]: 10
}

// TestCorpus checks the corpus itself: its size, its mix, and the rules
// that keep it deterministic when programs run side by side.
func TestCorpus(t *testing.T) {
	progs := corpus(t)
	if len(progs) < 120 {
		t.Errorf("corpus has %d programs, want at least 120", len(progs))
	}
	vars := map[string]string{"workload": "workload", "testdata": "testdata"}
	probe := regexp.MustCompile(`(?m)^(tracepoint|rawtracepoint|kprobe|kretprobe|uprobe|uretprobe|interval|profile|software|hardware|kfunc|kretfunc|fentry|fexit):`)
	var json, traced int
	for _, p := range progs {
		if p.JSON() {
			json++
		}
		if _, err := p.Argv(vars); err != nil {
			t.Error(err)
		}
		src, err := os.ReadFile(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		if !probe.Match(src) {
			continue
		}
		traced++
		// Both tools run at once, beside other programs: an event probe
		// must count only its own command's events.
		if !strings.Contains(string(src), "cpid") || !slices.Contains(p.Options, "-c") {
			t.Errorf("%s: a program with event probes must run a command with -c and filter on cpid", p.Name)
		}
	}
	if 3*json < len(progs) {
		t.Errorf("%d of %d programs use -f json, want at least a third", json, len(progs))
	}
	if traced < 20 {
		t.Errorf("%d programs trace a command, want at least 20", traced)
	}
}
