package session

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progressAfter is how long a phase runs silently before its progress
// line appears, and progressEvery how often the line is rewritten.
const (
	progressAfter = time.Second
	progressEvery = 100 * time.Millisecond
)

// A progress line tells how far a slow phase (loading, attaching,
// detaching) has got, as "kinst: attaching 120 of 360 probes", rewritten
// in place on a terminal once the phase has taken progressAfter, and
// erased when it ends.
type progress struct {
	w     io.Writer
	what  string // "attaching %d of %d probes"
	total int
	done  atomic.Int64
	stop  chan struct{}
	ended sync.WaitGroup
}

// startProgress starts the line of a phase of total steps, what being
// its format with the steps done and the total; it is nil,
// and its methods do nothing, when no line is wanted.
func startProgress(w io.Writer, what string, total int, after time.Duration) *progress {
	if w == nil || total < 2 {
		return nil
	}
	p := &progress{w: w, what: what, total: total, stop: make(chan struct{})}
	p.ended.Go(func() { p.run(after) })
	return p
}

func (p *progress) run(after time.Duration) {
	select {
	case <-p.stop:
		return
	case <-time.After(after):
	}
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		fmt.Fprintf(p.w, "\r\033[Kkinst: "+p.what, p.done.Load(), p.total)
		select {
		case <-p.stop:
			fmt.Fprint(p.w, "\r\033[K")
			return
		case <-tick.C:
		}
	}
}

// step counts n steps done.
func (p *progress) step(n int) {
	if p != nil {
		p.done.Add(int64(n))
	}
}

// end erases the line, if it was shown, before anything else is written.
func (p *progress) end() {
	if p != nil {
		close(p.stop)
		p.ended.Wait()
	}
}

// stepCloser counts a step of the detaching phase when it closes.
type stepCloser struct {
	io.Closer
	p *progress
}

func (c stepCloser) Close() error {
	defer c.p.step(1)
	return c.Closer.Close()
}
