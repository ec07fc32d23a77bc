package inject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The points kinst passes through.
const (
	Compile = "compile" // once, before the program is compiled
	Maps    = "maps"    // once, before the maps are created
	Load    = "load"    // before each program is loaded
	Command = "command" // once, before the -c command starts
	Attach  = "attach"  // before each program is attached
	Read    = "read"    // before each read of the ring buffer
	End     = "end"     // once, before END runs
	Print   = "print"   // before each map printed at exit
	Detach  = "detach"  // once, before the probes are detached
	// RefCtr, failed on its first pass, takes the uprobe reference
	// counter away, so that kinst raises USDT semaphores itself.
	RefCtr = "uprobe_ref_ctr"
)

// ErrInjected is the failure Fail injects.
var ErrInjected = errors.New("injected fault")

// Var is the environment variable the settings come from.
const Var = "KINST_INJECT"

type point struct {
	delay   time.Duration
	delayAt int // 1-based pass that waits; 0 for every one
	failAt  int // 1-based pass that fails; 0 for none
	delays  int // passes through Delay
	fails   int // passes through Fail
}

var state struct {
	once   sync.Once
	mu     sync.Mutex
	points map[string]*point
	err    error
}

func points() (map[string]*point, error) {
	state.once.Do(func() { state.points, state.err = parse(os.Getenv(Var)) })
	return state.points, state.err
}

func parse(s string) (map[string]*point, error) {
	ps := map[string]*point{}
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		key, val, ok := strings.Cut(f, "=")
		name, what, ok2 := strings.Cut(key, ".")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%s: %q is not point.delay=D or point.fail=N", Var, f)
		}
		p := ps[name]
		if p == nil {
			p = &point{}
			ps[name] = p
		}
		var err error
		switch what {
		case "delay":
			d, at, hasAt := strings.Cut(val, "@")
			if p.delay, err = time.ParseDuration(d); err == nil && hasAt {
				p.delayAt, err = pass(at)
			}
		case "fail":
			p.failAt, err = pass(val)
		default:
			err = errors.New("want delay or fail")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %v", Var, f, err)
		}
	}
	return ps, nil
}

func pass(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err == nil && n < 1 {
		err = errors.New("N counts from 1")
	}
	return n, err
}

// Check reports a malformed KINST_INJECT, so that a test's typo shows
// instead of silently injecting nothing.
func Check() error {
	_, err := points()
	return err
}

// Delay waits as long as point is set to, once it has said so on
// standard error; it returns ctx's error if ctx ends first.
func Delay(ctx context.Context, name string) error {
	ps, _ := points()
	p := ps[name]
	if p == nil || p.delay == 0 || !count(&p.delays, p.delayAt) {
		return ctx.Err()
	}
	// Tests wait for this line to know which step kinst is in.
	fmt.Fprintf(os.Stderr, "kinst: inject: %v at %s\n", p.delay, name)
	t := time.NewTimer(p.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Fail returns ErrInjected on the pass through point it is set to fail
// at, and nil on every other.
func Fail(name string) error {
	ps, _ := points()
	p := ps[name]
	if p == nil || p.failAt == 0 {
		return nil
	}
	if count(&p.fails, p.failAt) {
		return fmt.Errorf("%s: %w", name, ErrInjected)
	}
	return nil
}

// count counts a pass in *passes and reports whether it is pass n, or
// any pass for n 0.
func count(passes *int, n int) bool {
	state.mu.Lock()
	defer state.mu.Unlock()
	*passes++
	return n == 0 || *passes == n
}
