package session

import (
	"errors"
	"sync"

	"kinst.dev/kinst/output"
)

// MapReader reads a running program's maps for another goroutine, such
// as a metrics exporter answering a scrape, while the session goes on.
type MapReader struct {
	mu sync.Mutex
	s  *Session // nil once the run has ended
	// dec is the reader's own, as the session's decodes records
	// meanwhile; they share the user-space symbolizer, which is safe
	// for concurrent use.
	dec *decoder
}

// ErrEnded reports a read after the run ended.
var ErrEnded = errors.New("the run has ended")

// Maps reads every map of the program, in the order the program
// declares them.
func (r *MapReader) Maps() ([]*output.Map, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		return nil, ErrEnded
	}
	maps := make([]*output.Map, 0, len(r.s.out.Maps))
	for _, gm := range r.s.out.Maps {
		m, err := r.s.readMap(gm, r.dec)
		if err != nil {
			return nil, err
		}
		maps = append(maps, m)
	}
	return maps, nil
}

// Map reads the map the program names name, such as "@bytes"; ok is
// false when the program has no such map.
func (r *MapReader) Map(name string) (m *output.Map, ok bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		return nil, false, ErrEnded
	}
	for _, gm := range r.s.out.Maps {
		if gm.Display() == name {
			m, err = r.s.readMap(gm, r.dec)
			return m, true, err
		}
	}
	return nil, false, nil
}

// Lost returns how many records the ring buffer refused since the run
// started.
func (r *MapReader) Lost() (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		return 0, ErrEnded
	}
	return r.s.lostTotal()
}

// Full returns, for each map in the order Maps returns them, how many
// updates it refused since the run started because it was full.
func (r *MapReader) Full() ([]uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.s == nil {
		return nil, ErrEnded
	}
	return r.s.fullTotals()
}

// end makes later reads fail, before the maps are closed.
func (r *MapReader) end() {
	r.mu.Lock()
	r.s = nil
	r.mu.Unlock()
}
