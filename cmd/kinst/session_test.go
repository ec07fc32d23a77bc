package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"kinst.dev/kinst/internal/testenv"
)

// sessionProg enters and leaves ksys_write in the workload, each half
// with a variable of its own name and type, its predicate, its
// argument or return value and its function.
const sessionProg = `kprobe:ksys_write /tid == cpid/ { $v = "enter"; printf("%s %d %s\n", $v, arg2, func); }
kretprobe:ksys_write /tid == cpid/ { $v = retval; printf("return %d %s\n", $v, func); }`

// A kprobe and a kretprobe on ksys_write run as one program through one
// kprobe session link in the 0.26.1 mode, as bpftrace 0.26.1's
// session_retval test has it: "Attached 1 probe". Each half sees its own
// argument, return value, variables and function. The 0.17 mode,
// --no-feature kprobe_session and a block naming its probe keep two
// programs, as does a session link the kernel refuses.
func TestKprobeSession(t *testing.T) {
	t.Parallel()
	w := workload(t)
	out := strings.Repeat("enter 100 ksys_write\nreturn 100 ksys_write\n", 3) + "\n\n"
	for _, tt := range []struct {
		name           string
		needs          []testenv.Feature
		env, args      []string
		prog           string
		stdout, stderr string
	}{
		{"session", []testenv.Feature{testenv.KprobeSession}, current, nil, sessionProg, out, "Attached 1 probe\n"},
		// The kernel refusing the session link (here, one injected
		// failure) leaves the kprobe and the kretprobe a kprobe each.
		{"refused", []testenv.Feature{testenv.KprobeSession}, append([]string{"KINST_INJECT=attach.fail=1"}, current...), nil, sessionProg, out, "Attached 2 probes\n"},
		{"no-feature", []testenv.Feature{testenv.Kprobe}, current, []string{"--no-feature", "kprobe_session"}, sessionProg, out, "Attached 2 probes\n"},
		{"0.17", []testenv.Feature{testenv.Kprobe}, v017, nil, sessionProg, "Attaching 2 probes...\n" + out, ""},
		{"probe named", []testenv.Feature{testenv.Kprobe}, current, nil,
			strings.Replace(sessionProg, "printf(\"return", "@p[probe] = 1; printf(\"return", 1),
			strings.TrimSuffix(out, "\n\n") + "\n\n@p[kretprobe:ksys_write]: 1\n", "Attached 2 probes\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testenv.Require(t, append(tt.needs, testenv.Ringbuf)...)
			args := append(tt.args, "-e", tt.prog, "-c", w+" write 3 100")
			kinstEnv(t, tt.env, args...).want(t, 0, tt.stdout, tt.stderr)
		})
	}
}

// -v says that the pair runs as a session, and why; one program attaches
// and one link detaches.
func TestKprobeSessionVerbose(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.KprobeSession, testenv.Ringbuf)
	r := kinstEnv(t, current, "-v", "-e", sessionProg, "-c", workload(t)+" write 1 7")
	if want := "enter 7 ksys_write\nreturn 7 ksys_write\n\n\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
	var attaches []string
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "kinst: kprobe:") || strings.HasPrefix(line, "kinst: kretprobe:") {
			attaches = append(attaches, line)
		}
	}
	want := []string{"kinst: kprobe:ksys_write (1 targets): kprobe.session: the kprobe and the kretprobe on the same function share one program and one kprobe session link, as bpftrace 0.26.1 pairs them, rather than a trampoline each"}
	if strings.Join(attaches, "\n") != strings.Join(want, "\n") {
		t.Errorf("attached:\n%s\nwant:\n%s", strings.Join(attaches, "\n"), strings.Join(want, "\n"))
	}
	if !regexp.MustCompile(`(?m)^kinst: detached 1 links in `).MatchString(r.stderr) {
		t.Errorf("want one link detached; stderr:\n%s", r.stderr)
	}
}

// A wildcard pair is one session over every function it matches: each
// function's entries and returns are counted under its own name, the
// return half telling the functions apart by the entry's attach cookies.
func TestKprobeSessionWildcard(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.KprobeSession, testenv.Ringbuf)
	prog := `kprobe:ksys_* /tid == cpid/ { @e[func] = count(); }
kretprobe:ksys_* /tid == cpid/ { @r[func] = count(); @v[func] = sum(retval); }`
	r := kinstEnv(t, current, "-v", "-e", prog, "-c", workload(t)+" write 4 25")
	if r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	maps := map[string]map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^@(\w)\[(\w+)\]: (\d+)$`).FindAllStringSubmatch(r.stdout, -1) {
		if maps[m[1]] == nil {
			maps[m[1]] = map[string]string{}
		}
		maps[m[1]][m[2]] = m[3]
	}
	if got := fmt.Sprint(maps["e"]["ksys_write"], " ", maps["r"]["ksys_write"], " ", maps["v"]["ksys_write"]); got != "4 4 100" {
		t.Errorf("ksys_write entered, returned, returned in all: %s, want 4 4 100\nstdout:\n%s", got, r.stdout)
	}
	if fmt.Sprint(maps["e"]) != fmt.Sprint(maps["r"]) {
		t.Errorf("entries %v and returns %v differ", maps["e"], maps["r"])
	}
	if n := strings.Count(r.stderr, ": kprobe.session: "); n != 1 || !strings.Contains(r.stderr, "kinst: detached 1 links in ") {
		t.Errorf("want one session program and one link; stderr:\n%s", r.stderr)
	}
}
