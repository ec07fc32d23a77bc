package instruments

import (
	"strings"
	"testing"

	"kinst.dev/kinst/check"
)

// TestWriteOrder orders the functions of the probes that ran: a probe
// inside a function counts for it, and a function that never ran, or a
// probe count knows no target of, is left out.
func TestWriteOrder(t *testing.T) {
	targets := map[string]*check.Target{}
	for _, fn := range []struct{ name, fn string }{
		{"/bin/x:main", "main"}, {"/bin/x:main+4", "main"}, {"/bin/x:add", "add"},
		{"/bin/x:sub", "sub"}, {"/bin/x:zero", "zero"},
	} {
		tg := &check.Target{Provider: "uprobe", Name: fn.name, Func: fn.fn}
		targets[tg.FullName()] = tg
	}
	calls := map[string]uint64{
		"uprobe:/bin/x:main": 5, "uprobe:/bin/x:main+4": 3, "uprobe:/bin/x:add": 7,
		"uprobe:/bin/x:sub": 7, "uprobe:/bin/x:zero": 0, "uprobe:/bin/y:other": 9,
	}
	var sb strings.Builder
	if err := writeOrder(&sb, calls, targets); err != nil {
		t.Fatal(err)
	}
	if want := "main\nadd\nsub\n"; sb.String() != want {
		t.Errorf("got\n%s\nwant\n%s", sb.String(), want)
	}
}
