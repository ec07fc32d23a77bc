package inject

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	ps, err := parse("attach.delay=300ms,attach.fail=3,maps.fail=1,load.delay=1m@2")
	if err != nil {
		t.Fatal(err)
	}
	if a := ps["attach"]; a == nil || a.delay != 300*time.Millisecond || a.failAt != 3 {
		t.Errorf("attach: %+v", a)
	}
	if m := ps["maps"]; m == nil || m.failAt != 1 || m.delay != 0 {
		t.Errorf("maps: %+v", m)
	}
	if l := ps["load"]; l == nil || l.delay != time.Minute || l.delayAt != 2 {
		t.Errorf("load: %+v", l)
	}
	for _, bad := range []struct{ in, err string }{
		{"attach", `KINST_INJECT: "attach" is not point.delay=D or point.fail=N`},
		{"attach=1", `KINST_INJECT: "attach=1" is not point.delay=D or point.fail=N`},
		{"attach.delay=soon", `KINST_INJECT: "attach.delay=soon": time: invalid duration "soon"`},
		{"attach.fail=0", `KINST_INJECT: "attach.fail=0": N counts from 1`},
		{"attach.delay=1s@0", `KINST_INJECT: "attach.delay=1s@0": N counts from 1`},
		{"attach.slow=1", `KINST_INJECT: "attach.slow=1": want delay or fail`},
	} {
		if _, err := parse(bad.in); err == nil || err.Error() != bad.err {
			t.Errorf("parse(%q) = %v, want %s", bad.in, err, bad.err)
		}
	}
}
