package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A run is what one execution of a command left behind.
type run struct {
	start, exit int64 // CLOCK_MONOTONIC at fork and when wait4 returned
	maxRSS      int64 // bytes, from wait4's rusage
	out         lines
	stderr      string
}

func (r *run) wall() int64 { return r.exit - r.start }

// lines tallies what a tool prints, with the time each line arrived.
type lines struct {
	// event marks printf event lines: they end with it.
	event string

	events    int
	lastEvent int64 // arrival of the last event line
	firstMap  int64 // arrival of the first map line ("@...")
	maps      []string
	sums      map[string]int64 // each map's values added up, by name ("@ms")
	lost      uint64           // the sum of "Lost N events" lines
	attached  int              // from an "Attaching N probes..." line
	full      uint64           // updates kinst reports full maps refused
}

// maxMapLines bounds what a run keeps of the maps it prints: the checks
// look for one key, and a map keyed by comm on a busy machine has many.
const maxMapLines = 256

func (l *lines) add(line []byte, at int64) {
	switch {
	case len(line) > 0 && line[0] == '@':
		if l.firstMap == 0 {
			l.firstMap = at
		}
		if len(l.maps) < maxMapLines {
			l.maps = append(l.maps, string(line))
		}
		l.addToSum(line)
	case l.event != "" && bytes.HasSuffix(line, []byte(l.event)):
		l.events++
		l.lastEvent = at
	default:
		if n, ok := parseLost(line); ok {
			l.lost += n
		}
		if n, ok := parseAttached(line); ok {
			l.attached = n
		}
	}
}

// addToSum adds the value of a map line with a plain number, such as
// "@ms[1234]: 5" or "@calls: 7", to its map's sum.
func (l *lines) addToSum(line []byte) {
	i := bytes.IndexAny(line, "[:")
	j := bytes.LastIndex(line, []byte(": "))
	if i < 0 || j < i {
		return
	}
	v, err := strconv.ParseInt(string(line[j+2:]), 10, 64)
	if err != nil {
		return
	}
	if l.sums == nil {
		l.sums = map[string]int64{}
	}
	l.sums[string(line[:i])] += v
}

// readFrom adds the lines read from r until it ends. Every line of one
// read gets the time the read returned: the moment the tool's write
// reached the harness, at the cost of one clock reading per read.
func (l *lines) readFrom(r io.Reader, now func() int64) {
	buf := make([]byte, 256<<10)
	var partial []byte // a line's start, held until its end arrives
	for {
		n, err := r.Read(buf)
		at := now()
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				partial = append(partial, chunk...)
				break
			}
			line := chunk[:i]
			if len(partial) > 0 {
				line = append(partial, line...)
				partial = partial[:0]
			}
			l.add(line, at)
			chunk = chunk[i+1:]
		}
		if err != nil {
			if len(partial) > 0 {
				l.add(partial, at)
			}
			return
		}
	}
}

// parseLost reads a "Lost N events" line, which both tools print when
// the kernel could not hand events over.
func parseLost(line []byte) (uint64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("Lost "))
	if !ok {
		return 0, false
	}
	num, ok := bytes.CutSuffix(rest, []byte(" events"))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(num), 10, 64)
	return n, err == nil
}

// parseFull reads kinst's warning of a full map, "kinst: warning: map
// @ms was full: 12 updates dropped; ...", for the count of updates.
func parseFull(line []byte) (uint64, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("kinst: warning: map @"))
	if !ok {
		return 0, false
	}
	_, rest, ok = bytes.Cut(rest, []byte(" was full: "))
	if !ok {
		return 0, false
	}
	num, _, ok := bytes.Cut(rest, []byte(" update"))
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(string(num), 10, 64)
	return n, err == nil
}

// mapValue finds the value printed for key in a map line such as
// "@[workload]: 2000000".
func (l *lines) mapValue(key string) (int64, bool) {
	prefix := key + ": "
	for _, m := range l.maps {
		if v, ok := strings.CutPrefix(m, prefix); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// runner executes commands and times them.
type runner struct {
	clock   clock
	timeout time.Duration
	tmp     string // where stderr files go
}

var errTimeout = errors.New("timed out")

// run executes argv with its standard output on a pipe read line by line
// and its standard error in a file. The command gets a process group of
// its own, so that a timeout ends whatever it started. A non-zero exit
// status is an error carrying the end of standard error.
func (r *runner) run(argv []string, event string) (*run, error) {
	return r.runWatched(argv, event, nil)
}

// runWatched is run with watch, when not nil, called on its own
// goroutine with the command's pid once it has started, and a channel
// closed once the command has ended; run returns after watch does.
func (r *runner) runWatched(argv []string, event string, watch func(pid int, done <-chan struct{})) (*run, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	stderr, err := os.CreateTemp(r.tmp, "stderr")
	if err != nil {
		return nil, err
	}
	defer os.Remove(stderr.Name())
	defer stderr.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()

	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = pw, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	res := &run{out: lines{event: event}}
	res.start = r.clock.now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return nil, err
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		res.out.readFrom(pr, r.clock.now)
	}()
	ended, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		if watch != nil {
			watch(cmd.Process.Pid, ended)
		}
	}()
	waitErr := cmd.Wait()
	res.exit = r.clock.now()
	close(ended)
	<-watched
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.maxRSS = ru.Maxrss << 10
	}
	// A child the command left behind may hold the pipe open; its
	// process group goes too.
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		pr.Close()
		<-read
	}
	if b, err := os.ReadFile(stderr.Name()); err == nil {
		res.stderr = string(b)
		for _, line := range bytes.Split(b, []byte("\n")) {
			if n, ok := parseLost(line); ok {
				res.out.lost += n
			}
			if n, ok := parseFull(line); ok {
				res.out.full += n
			}
			if n, ok := parseAttached(line); ok {
				res.out.attached = n
			}
		}
	}
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("%s: %w after %v", argv[0], errTimeout, r.timeout)
	case waitErr != nil:
		return res, fmt.Errorf("%s: %w: %s", argv[0], waitErr, tail(res.stderr, 400))
	}
	return res, nil
}

// tail is the end of s, at most n bytes, on one line.
func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return strings.ReplaceAll(s, "\n", " | ")
}
