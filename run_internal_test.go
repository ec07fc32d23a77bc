package kinst

import (
	"testing"

	"kinst.dev/kinst/session"
)

// TestBuffering reads each of -B's arguments and expects the mode the
// runtime is then given.
func TestBuffering(t *testing.T) {
	tests := []struct {
		arg     string
		want    Buffering
		session session.Buffering
	}{
		{"", BufferDrained, session.BufferDrained},
		{"line", BufferLine, session.BufferLine},
		{"full", BufferFull, session.BufferFull},
		{"none", BufferNone, session.BufferNone},
	}
	for _, tt := range tests {
		b, err := ParseBuffering(tt.arg)
		if err != nil || b != tt.want || b.session() != tt.session {
			t.Errorf("ParseBuffering(%q) = %v (%v), %v; want %v (%v)", tt.arg, b, b.session(), err, tt.want, tt.session)
		}
	}
	const want = `-B must be either 'line', 'full', or 'none', not "lines"`
	if _, err := ParseBuffering("lines"); err == nil || err.Error() != want {
		t.Errorf("ParseBuffering(%q): got %v, want %s", "lines", err, want)
	}
}
