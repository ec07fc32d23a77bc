package session

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer the progress line's goroutine and the
// test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProgress: a phase quicker than its delay writes nothing; a slower
// one shows its count, rewritten in place, and erases it at its end.
func TestProgress(t *testing.T) {
	var quick lockedBuffer
	p := startProgress(&quick, "attaching %d of %d probes", 3, time.Hour)
	p.step(1)
	p.end()
	if quick.String() != "" {
		t.Errorf("a quick phase wrote %q", quick.String())
	}

	var slow lockedBuffer
	p = startProgress(&slow, "detaching %d of %d probes", 3, 0)
	for range 2 {
		p.step(1)
	}
	waitFor(t, &slow, "\r\033[Kkinst: detaching 2 of 3 probes")
	p.step(1)
	waitFor(t, &slow, "\r\033[Kkinst: detaching 3 of 3 probes")
	p.end()
	if got := slow.String(); !strings.HasSuffix(got, "probes\r\033[K") {
		t.Errorf("the line was not erased at the end: %q", got)
	}
	if startProgress(nil, "loading %d of %d programs", 10, 0) != nil || startProgress(&slow, "loading %d of %d programs", 1, 0) != nil {
		t.Error("a progress line without a writer, or for one step, was started")
	}
	var none *progress
	none.step(1)
	none.end()
}

// waitFor waits for the progress line to have written want.
func waitFor(t *testing.T, b *lockedBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("the progress line never read %q: %q", want, b.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
