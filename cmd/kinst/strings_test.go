package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// TestStrings026 runs bpftrace 0.26.1's strings: max_strlen is 1024 by
// default, str(p, n) reads n bytes with the NUL among them (and one more
// when max_strlen is below 1024), and a string cut short prints with the
// str_trunc_trailer. The 0.17 mode keeps 0.17's: 64 bytes, n characters
// and no trailer. The -c command's execve has argv[1] "getppid".
func TestStrings026(t *testing.T) {
	t.Parallel()
	tracing(t)
	w := workload(t)
	const execve = "tracepoint:syscalls:sys_enter_execve /pid == cpid/ "
	long := "/" + strings.Repeat("X", 1499)
	tests := []struct {
		name   string
		env    []string
		args   []string
		stdout string
		stderr string
	}{
		{
			name:   "str_truncated",
			env:    []string{"BPFTRACE_MAX_STRLEN=5"},
			args:   []string{"-e", execve + `{ printf("P: %s\n", str(args.argv[1])); exit(); }`},
			stdout: "P: getpp..\n\n\n",
		},
		{
			// A struct's char array fills its size without being cut
			// short: only str()'s strings get the trailer.
			name:   "char array",
			args:   []string{"-e", `struct F { char s[5]; } begin { $b = "hello world"; $a = ((struct F *)&$b)->s; printf("%s %s\n", $a, $a); exit(); }`},
			stdout: "hello hello\n\n\n",
		},
		{
			name:   "str_truncated_custom",
			env:    []string{"BPFTRACE_MAX_STRLEN=5", "BPFTRACE_STR_TRUNC_TRAILER=_xxx"},
			args:   []string{"-e", execve + `{ printf("P: %s\n", str(args.argv[1])); exit(); }`},
			stdout: "P: getpp_xxx\n\n\n",
		},
		{
			name:   "the trailer from the config block",
			env:    []string{"BPFTRACE_MAX_STRLEN=5"},
			args:   []string{"-e", `config = { str_trunc_trailer = "~" } ` + execve + `{ printf("P: %s\n", str(args.argv[1])); exit(); }`},
			stdout: "P: getpp~\n\n\n",
		},
		{
			name:   "an empty trailer",
			env:    []string{"BPFTRACE_MAX_STRLEN=5", "BPFTRACE_STR_TRUNC_TRAILER="},
			args:   []string{"-e", `config = { str_trunc_trailer = "~" } ` + execve + `{ printf("P: %s\n", str(args.argv[1])); exit(); }`},
			stdout: "P: getpp\n\n\n",
		},
		{
			name:   "a string that fits has none",
			env:    []string{"BPFTRACE_MAX_STRLEN=8"},
			args:   []string{"-e", execve + `{ printf("P: %s\n", str(args.argv[1])); exit(); }`},
			stdout: "P: getppid\n\n\n",
		},
		{
			name:   "explicit string truncation",
			args:   []string{"-e", execve + `{ print(str(args.argv[1], 5)); exit(); }`},
			stdout: "getp\n\n\n",
		},
		{
			name:   "string truncation variable length",
			args:   []string{"-e", execve + `{ $a = (uint16)5; print(str(args.argv[1], $a)); exit(); }`},
			stdout: "getp\n\n\n",
		},
		{
			name:   "explicit string truncation with expression",
			args:   []string{"-e", execve + `{ $a = 1; print(str(args.argv[1], $a + 4)); exit(); }`},
			stdout: "getp\n\n\n",
		},
		{
			name:   "truncation below 1024 keeps n characters",
			env:    []string{"BPFTRACE_MAX_STRLEN=6"},
			args:   []string{"-e", execve + `{ $a = 3; print(str(args.argv[1], 3)); print(str(args.argv[1], $a)); print(str(args.argv[1], 6)); print(str(args.argv[1], $a + 4)); exit(); }`},
			stdout: "get\nget\ngetppi..\ngetppi..\n\n\n",
			stderr: "-e:1:127: warning: length param (6) is too long and will be shortened to 6 bytes (see BPFTRACE_MAX_STRLEN)\n" +
				"tracepoint:syscalls:sys_enter_execve /pid == cpid/ { $a = 3; print(str(args.argv[1], 3)); print(str(args.argv[1], $a)); print(str(args.argv[1], 6)); print(str(args.argv[1], $a + 4)); exit(); }\n" +
				strings.Repeat(" ", 126) + "^~~~~~~~~~~~~~~~~~~~\n",
		},
		{
			name:   "of a string",
			args:   []string{"-e", execve + `{ $s = str(args.argv[1]); $a = 3; print(str($s, $a)); exit(); }`},
			stdout: "ge\n\n\n",
		},
		{
			name: "maps, tuples and print",
			env:  []string{"BPFTRACE_MAX_STRLEN=5"},
			args: []string{"-e", execve + `{ @[str(args.argv[1])] = str(args.argv[1]); $s = str(args.argv[1]); print($s); print((1, $s)); exit(); }`},
			stdout: "getpp..\n(1, getpp..)\n\n\n" +
				"@[getpp..]: getpp..\n",
		},
		{
			name: "JSON",
			env:  []string{"BPFTRACE_MAX_STRLEN=5"},
			args: []string{"-f", "json", "-e", execve + `{ @[str(args.argv[1])] = str(args.argv[1]); printf("%s\n", str(args.argv[1])); print(str(args.argv[1])); exit(); }`},
			stdout: `{"type": "printf", "data": "getpp..\n"}` + "\n" +
				`{"type": "value", "data": "getpp.."}` + "\n" +
				`{"type": "map", "data": {"@": {"getpp..": "getpp.."}}}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := append([]string{"KINST_COMPAT="}, tt.env...)
			args := append(append([]string{"-q"}, tt.args...), "-c", w+" getppid 1")
			kinstEnv(t, env, args...).want(t, 0, tt.stdout, tt.stderr)
		})
	}
	t.Run("1024-byte map keys", func(t *testing.T) {
		t.Parallel()
		// A 1024-byte string keeps 1023 characters and its NUL, so
		// bpftrace 0.26.1 marks nothing cut; below 1024 the trailer
		// shows.
		prog := `tracepoint:syscalls:sys_enter_openat /pid == cpid/ { @[str(args.filename)] = count(); }`
		got := kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog, "-c", w+" openat 3 "+long)
		if want := "@[" + long[:1023] + "]: 3\n"; !strings.Contains(got.stdout, want) || got.code != 0 || got.stderr != "" {
			t.Errorf("exit status %d, stdout:\n%s\nstderr:\n%s\nwant a line %q", got.code, got.stdout, got.stderr, want)
		}
		got = kinstEnv(t, []string{"KINST_COMPAT=", "BPFTRACE_MAX_STRLEN=1000"}, "-q", "-e", prog, "-c", w+" openat 3 "+long)
		if want := "@[" + long[:1000] + "..]: 3\n"; !strings.Contains(got.stdout, want) || got.code != 0 || got.stderr != "" {
			t.Errorf("exit status %d, stdout:\n%s\nstderr:\n%s\nwant a line %q", got.code, got.stdout, got.stderr, want)
		}
	})
	t.Run("0.17", func(t *testing.T) {
		t.Parallel()
		env := []string{"KINST_COMPAT=0.17", "BPFTRACE_MAX_STRLEN=5", "BPFTRACE_STR_TRUNC_TRAILER=_xxx"}
		prog := execve + `{ $a = 3; printf("P: %s %s %s\n", str(args.argv[1]), str(args.argv[1], 3), str(args.argv[1], $a)); exit(); }`
		kinstEnv(t, env, "-q", "-e", prog, "-c", w+" getppid 1").want(t, 0, "P: getp get get\n\n\n", "")
		prog = execve + `{ printf("P: %s %s\n", str(args.argv[1]), str(args.argv[1], 5)); exit(); }`
		kinstEnv(t, []string{"KINST_COMPAT=0.17"}, "-q", "-e", prog, "-c", w+" getppid 1").want(t, 0, "P: getppid getpp\n\n\n", "")
	})
}

// The probes' scratch memory, where 1024-byte strings live, is a per-CPU
// map value, or each CPU's slice of an array when that is too small.
// Tracepoints never run nested in one another on a CPU and share one
// region, so any number of them fit; BEGIN probes, which a tracepoint
// may interrupt, each have their own, and past the kernel's bound on an
// array value the program is refused at the probe that crosses it, not
// at load.
func TestStringsScratchBound(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Tracepoint)
	var shared strings.Builder
	for i := range 60 {
		fmt.Fprintf(&shared, `tracepoint:syscalls:sys_enter_openat { @a%d[str(args.filename)] = count(); } `, i)
	}
	kinstEnv(t, []string{"KINST_COMPAT="}, "--dry-run", "-e", shared.String()).want(t, 0, "", "")
	// Together they outgrow a per-CPU map value (32 KiB): each CPU's
	// slice of an array holds them.
	var own strings.Builder
	for i := range 40 {
		fmt.Fprintf(&own, `BEGIN { @a%d[str(0)] = count(); } `, i)
	}
	kinstEnv(t, []string{"KINST_COMPAT="}, "--dry-run", "-e", own.String()).want(t, 0, "", "")
	// An array's value holds 4 MiB: 70 regions of 60000 bytes are more.
	own.Reset()
	for i := range 70 {
		fmt.Fprintf(&own, `BEGIN { @a%d[str(0)] = count(); } `, i)
	}
	p := own.String()
	at := strings.Index(p, "BEGIN { @a69[")
	probe := len("BEGIN { @a69[str(0)] = count(); }")
	kinstEnv(t, []string{"KINST_COMPAT=", "BPFTRACE_MAX_STRLEN=60000"}, "--dry-run", "-e", p).want(t, 1, "",
		fmt.Sprintf("-e:1:%d: this probe and those before it that may run nested in other probes need 4200000 bytes of scratch memory together; the kernel allows 4194304 (a smaller BPFTRACE_MAX_STRLEN needs less)\n", at+1)+
			p+"\n"+strings.Repeat(" ", at)+"^"+strings.Repeat("~", probe-1)+"\n")
}

// strcontains() and strstr() search 1024-byte strings for needles of
// any length: past what the verifier follows position by position, the
// search runs through bpf_loop. The path opened is "/", 1000 X's,
// "/usr/lib/", then "abcdefghijklmnopq", of which a 1024-byte string
// keeps up to the "m" at 1022. $m, $e, $x and $k are 1024-byte strings
// holding less, $k the last 3 bytes of the workload's comm; comm is on
// the stack, the others in scratch memory.
func TestStrcontainsLong(t *testing.T) {
	t.Parallel()
	tracing(t)
	testenv.Require(t, testenv.Loop)
	w := workload(t)
	path := "/" + strings.Repeat("X", 1000) + "/usr/lib/abcdefghijklmnopq"
	name := comm(w)
	k := name[len(name)-3:]
	tests := []struct {
		name, expr, want string
	}{
		{"found at the start", `strstr($f, "/XXXXX")`, "0"},
		{"found in the middle", `strstr($f, "/usr/lib/")`, "1001"},
		{"strcontains found", `strcontains($f, "/usr/lib/")`, "1"},
		{"found at the end", `strstr($f, "jklm")`, "1019"},
		{"cut off by the end", `strstr($f, "klmn")`, "-1"},
		{"not found", `strcontains($f, "/usr/lib/Z")`, "0"},
		{"empty needle", `strstr($f, $e)`, "0"},
		{"strcontains empty needle", `strcontains($f, $e)`, "1"},
		{"long needle in the middle", `strstr($f, $m)`, "1001"},
		{"long needle, the whole string", `strstr($f, $f)`, "0"},
		{"long needle, 999 bytes", `strstr($f, str(args.filename, 1000))`, "0"},
		{"needle longer than the haystack", `strstr(str(args.filename, 8), $f)`, "-1"},
		{"short needle in a long buffer", `strstr(str(args.filename, 8), $x)`, "1"},
		{"haystack on the stack", `strstr(comm, $k)`, strconv.Itoa(strings.Index(name, k))},
		{"strcontains haystack on the stack", `strcontains(comm, $m)`, "0"},
	}
	var exprs []string
	var want strings.Builder
	for _, tt := range tests {
		exprs = append(exprs, tt.expr)
		fmt.Fprintf(&want, "%s: %s\n", tt.name, tt.want)
	}
	var prog strings.Builder
	prog.WriteString(`tracepoint:syscalls:sys_enter_openat /pid == cpid && strncmp(str(args.filename), "/XXX", 4) == 0/ {` +
		` $f = str(args.filename); $m = $f; $m = "/usr/lib/abc"; $e = $f; $e = ""; $x = $f; $x = "XXX"; $k = $f; $k = "` + k + `";`)
	for i, tt := range tests {
		fmt.Fprintf(&prog, ` printf("%s: %%d\n", %s);`, tt.name, exprs[i])
	}
	prog.WriteString(" exit(); }")
	got := kinstEnv(t, []string{"KINST_COMPAT="}, "-q", "-e", prog.String(), "-c", w+" openat 1 "+path)
	got.want(t, 0, want.String()+"\n\n", "")
}
