package session

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"kinst.dev/kinst/elfsym"
	"kinst.dev/kinst/internal/inject"
)

// command is a -c command held until the probes are attached. It is
// started under ptrace through the stub (see execstub.go), which stops
// itself before it execs the command, so that probes see that execve and
// nothing of kinst's own; without a stub, the command is stopped right
// after its exec, before the dynamic loader runs. Letting it go detaches
// it.
type command struct {
	cmd      *exec.Cmd
	started  chan error
	go_      chan bool  // true: let it run; false: kill it
	released chan error // the exec's outcome, once let go
	done     chan struct{}
	once     sync.Once
	// onExec, when set before release, is called with the command
	// stopped right after its exec.
	onExec func(pid int)
}

// startCommand starts the command held before its exec, or after it
// when afterExec asks.
func startCommand(argv []string, afterExec bool) (*command, error) {
	path, err := exec.LookPath(argv[0])
	if err == nil {
		err = inject.Fail(inject.Command)
	}
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", argv[0], err)
	}
	c := &command{started: make(chan error), go_: make(chan bool, 1), released: make(chan error, 1), done: make(chan struct{})}
	go c.supervise(path, argv, afterExec)
	if err := <-c.started; err != nil {
		return nil, err
	}
	return c, nil
}

// supervise starts the command and releases it. ptrace requests must
// come from the thread that started the tracee, so it runs on a locked
// thread that dies with it.
func (c *command) supervise(path string, argv []string, afterExec bool) {
	runtime.LockOSThread()
	defer close(c.done)
	viaStub, err := c.start(path, argv, afterExec)
	if err != nil {
		c.started <- fmt.Errorf("start command %s: %w", argv[0], err)
		return
	}
	c.started <- nil
	pid := c.cmd.Process.Pid
	if run := <-c.go_; !run {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		return
	}
	if !viaStub {
		if c.onExec != nil {
			c.onExec(pid)
		}
		syscall.PtraceDetach(pid)
		c.released <- nil
		c.waitExit()
		return
	}
	// Traced to the exec, which says whether the command started.
	err = syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACEEXEC)
	var ws syscall.WaitStatus
	if err == nil {
		ws, err = continueUntil(pid, func(ws syscall.WaitStatus) bool { return ws.TrapCause() == syscall.PTRACE_EVENT_EXEC })
	}
	switch {
	case err != nil:
		c.cmd.Process.Kill()
		c.cmd.Wait()
	case ws.Exited():
		// The stub exits with the errno of an exec that failed; it is
		// reaped.
		err = syscall.Errno(ws.ExitStatus())
	case !ws.Stopped():
		err = fmt.Errorf("it %s before it ran", describe(ws))
	default:
		if c.onExec != nil {
			c.onExec(pid)
		}
		syscall.PtraceDetach(pid)
		c.released <- nil
		c.waitExit()
		return
	}
	c.released <- fmt.Errorf("start command %s: %w", argv[0], err)
}

// start starts the command held: through the stub, stopped by itself
// before its exec, or directly, stopped after it. It reports which.
func (c *command) start(path string, argv []string, afterExec bool) (viaStub bool, err error) {
	if !afterExec {
		if ran, err := c.startStub(path, argv); ran {
			return true, err
		}
	}
	c.cmd = tracedCommand(path, argv)
	if err := c.cmd.Start(); err != nil {
		return false, err
	}
	if _, err := stopped(c.cmd.Process.Pid); err != nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		return false, err
	}
	return false, nil
}

// startStub starts the command through the stub and waits for the stub
// to stop itself. It reports whether the stub ran: the system may have
// no stub to give or refuse to run it.
func (c *command) startStub(path string, argv []string) (ran bool, err error) {
	fd, stubPath := stubFile()
	if fd < 0 {
		return false, nil
	}
	c.cmd = tracedCommand(stubPath, append([]string{"kinst", path}, argv...))
	err = c.cmd.Start()
	unix.Close(fd)
	if err != nil {
		return false, nil
	}
	pid := c.cmd.Process.Pid
	// Stopped at the stub's exec; then by its own SIGSTOP.
	ws, err := stopped(pid)
	if err == nil {
		ws, err = continueUntil(pid, func(ws syscall.WaitStatus) bool { return ws.StopSignal() == syscall.SIGSTOP })
	}
	if err == nil && !ws.Stopped() {
		err = fmt.Errorf("it %s before it ran", describe(ws))
	}
	if err != nil {
		// Kill and Wait go through a pidfd, so a process reaped above
		// is not confused with another that took its pid.
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
	return true, err
}

// waitExit waits for the command let go to end, and reaps it. Until it
// exits the wait is on a pidfd, which tells an exit alone: core() seizes
// the command's threads with ptrace from this process, its parent, and
// a wait for the child would take those stops for its end. Before Linux
// 5.10 there is no pidfd to wait on.
func (c *command) waitExit() {
	if w := watchProcess(c.cmd.Process.Pid); w.fd != nil {
		w.wait()
		w.close()
	}
	c.cmd.Wait()
}

// tracedCommand makes the command line to start under ptrace.
func tracedCommand(path string, argv []string) *exec.Cmd {
	return &exec.Cmd{Path: path, Args: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		// The parent-death signal comes when the locked thread ends:
		// with kinst's process, however it ends, or after the command.
		SysProcAttr: &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL}}
}

// stopped waits for the stop at a traced process's exec.
func stopped(pid int) (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return ws, fmt.Errorf("wait for its exec: %w", err)
	}
	if !ws.Stopped() {
		return ws, fmt.Errorf("it %s before it ran", describe(ws))
	}
	return ws, nil
}

// describe says how a process waited for ended or stopped.
func describe(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exited with status %d", ws.ExitStatus())
	case ws.Signaled():
		return "was killed by " + ws.Signal().String()
	case ws.Stopped():
		return "was stopped by " + ws.StopSignal().String()
	}
	return fmt.Sprintf("gave wait status %#x", uint32(ws))
}

// continueUntil continues a traced process, handing it the signals it
// gets on the way, until it stops as want says or ends.
func continueUntil(pid int, want func(syscall.WaitStatus) bool) (syscall.WaitStatus, error) {
	sig := 0
	for {
		if err := syscall.PtraceCont(pid, sig); err != nil {
			return 0, err
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return ws, err
		}
		if !ws.Stopped() || want(ws) {
			return ws, nil
		}
		sig = 0
		if ws.StopSignal() != syscall.SIGTRAP {
			sig = int(ws.StopSignal())
		}
	}
}

// pid is the command's process id, or 0 when there is no command.
func (c *command) pid() int {
	if c == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// release lets the command run, and returns when it has exec'd, or
// has ended for failing to.
func (c *command) release() error {
	c.once.Do(func() { c.go_ <- true })
	err := <-c.released
	if err != nil {
		<-c.done
	}
	return err
}

// wait waits for the command to end.
func (c *command) wait() { <-c.done }

// killGrace is how long a command has to end after SIGTERM before it
// gets SIGKILL.
const killGrace = time.Second

// kill ends a command that is still held or running when kinst stops
// for another reason, and reaps it.
func (c *command) kill() {
	c.once.Do(func() { c.go_ <- false })
	select {
	case <-c.done:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(killGrace):
		c.cmd.Process.Kill()
		<-c.done
	}
}

// SplitCommand splits a -c command line into words as a shell would for
// plain words, single and double quotes, and backslashes, without
// running a shell.
func SplitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(s) && strings.IndexByte(`"\$`+"`", s[i+1]) >= 0 {
				i++
				cur.WriteByte(s[i])
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote in command")
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

// rememberEvery is how often the mappings of a -c command and of its
// descendants are read while they run.
const rememberEvery = 50 * time.Millisecond

// rememberCommand reads the mappings of the command and of its
// descendants while they run, into usyms: the user stacks that maps
// keep are resolved when the maps are printed, at exit, when the
// processes are gone and their mappings with them. It is called before
// release: the first read is of the command stopped at its exec, which a
// short command outlives by less than a tick.
func rememberCommand(c *command, usyms *elfsym.Symbolizer) {
	c.onExec = func(pid int) {
		usyms.Remember(pid)
		go watchFamily(c, usyms)
	}
}

// watchFamily reads the mappings of the command and its descendants
// every rememberEvery until the command ends.
func watchFamily(c *command, usyms *elfsym.Symbolizer) {
	tick := time.NewTicker(rememberEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-tick.C:
		}
		for _, pid := range family(c.pid()) {
			usyms.Remember(pid) // a process gone meanwhile keeps what was read before
		}
	}
}

// family lists pid and its descendants, as /proc lists each thread's
// children.
func family(pid int) []int {
	pids := []int{pid}
	for i := 0; i < len(pids); i++ {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pids[i]))
		for _, t := range tasks {
			data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pids[i], t.Name()))
			for _, f := range strings.Fields(string(data)) {
				if child, err := strconv.Atoi(f); err == nil {
					pids = append(pids, child)
				}
			}
		}
	}
	return pids
}
