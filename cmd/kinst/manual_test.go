package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestManual: the man page shipped as kinst.1 is what kinst help --man
// writes from the usage text; regenerate it with
// go run ./cmd/kinst help --man > cmd/kinst/kinst.1.
func TestManual(t *testing.T) {
	want, err := os.ReadFile("kinst.1")
	if err != nil {
		t.Fatal(err)
	}
	r := kinst(t, "help", "--man")
	if r.code != 0 || r.stdout != string(want) {
		t.Errorf("kinst help --man differs from kinst.1 (go run ./cmd/kinst help --man > cmd/kinst/kinst.1):\nexit %d\n%s", r.code, r.stdout)
	}
	for _, opt := range []string{`.B \-p, \-\-pid PID`, `.B BPFTRACE_STRLEN`, `.B kinst trace`, `.SH TROUBLESHOOTING OPTIONS`} {
		if !strings.Contains(r.stdout, "\n"+opt) {
			t.Errorf("the man page has no line %q", opt)
		}
	}
}

// TestCompletion: each shell's script offers the instruments and the
// options of the usage text, and bash, where there is one, takes the
// script.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := kinst(t, "completion", sh)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("kinst completion %s: exit %d\n%s", sh, r.code, r.stderr)
		}
		for _, word := range []string{"latency", "--probe-filter", "features"} {
			if sh == "fish" {
				word = strings.NewReplacer("--probe-filter", "-l probe-filter", "latency", "-a latency").Replace(word)
			}
			if !strings.Contains(r.stdout, word) {
				t.Errorf("the %s completion does not offer %q:\n%s", sh, word, r.stdout)
			}
		}
		if _, err := exec.LookPath("bash"); sh == "bash" && err == nil {
			// The script defines the function and registers it.
			out, err := exec.Command("bash", "-c", r.stdout+"\ncomplete -p kinst").CombinedOutput()
			if err != nil || string(out) != "complete -o filenames -F _kinst kinst\n" {
				t.Errorf("bash does not take the script: %v\n%s", err, out)
			}
		}
	}
	kinst(t, "completion", "tcsh").want(t, 2, "", "kinst completion: no completion for \"tcsh\": bash, zsh or fish\n")
	kinst(t, "completion").want(t, 2, "", "kinst completion: name one shell: bash, zsh or fish\n")
}
