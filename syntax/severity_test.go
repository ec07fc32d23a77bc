package syntax

import "testing"

// TestSeverity: a warning's text says so before its message; an error's
// does not, and neither keeps the word in Msg.
func TestSeverity(t *testing.T) {
	f := NewFile("p.bt", []byte("begin { exit(); }\n"))
	var l ErrorList
	l.Add(f, f.Pos(8), f.Pos(12), "an error")
	l.Warn(f, f.Pos(8), f.Pos(12), "a warning")
	for i, want := range []string{"p.bt:1:9: an error", "p.bt:1:9: warning: a warning"} {
		if got := l[i].Error(); got != want {
			t.Errorf("entry %d reads %q, want %q", i, got, want)
		}
	}
	if l[1].Msg != "a warning" || l[1].Severity != SeverityWarning || l[0].Severity != SeverityError {
		t.Errorf("the warning is %+v, the error %+v", l[1], l[0])
	}
}
