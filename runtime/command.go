package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// command is a -c command held at its first instruction until the probes
// are attached. It is started under ptrace, which stops it right after
// exec, before the dynamic loader runs; detaching lets it go. Unlike a
// helper process that execs later, nothing of kinst's own runs under
// the command's pid, so probes see only the command.
type command struct {
	cmd     *exec.Cmd
	started chan error
	go_     chan bool // true: let it run; false: kill it
	done    chan struct{}
	once    sync.Once
}

func startCommand(argv []string) (*command, error) {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("command %s: %w", argv[0], err)
	}
	c := &command{started: make(chan error), go_: make(chan bool, 1), done: make(chan struct{})}
	go c.supervise(path, argv)
	if err := <-c.started; err != nil {
		return nil, err
	}
	return c, nil
}

// supervise starts the command and releases it. ptrace requests must
// come from the thread that started the tracee, so it runs on a locked
// thread that dies with it.
func (c *command) supervise(path string, argv []string) {
	runtime.LockOSThread()
	c.cmd = &exec.Cmd{Path: path, Args: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		// The parent-death signal comes when this locked thread ends:
		// with kinst's process, however it ends, or after the command.
		SysProcAttr: &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL}}
	if err := c.cmd.Start(); err != nil {
		c.started <- fmt.Errorf("start command %s: %w", argv[0], err)
		return
	}
	pid := c.cmd.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		c.started <- fmt.Errorf("start command %s: it did not stop at exec (%v)", argv[0], err)
		return
	}
	c.started <- nil
	run := <-c.go_
	if !run {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	syscall.PtraceDetach(pid)
	c.cmd.Wait()
	close(c.done)
}

// pid is the command's process id, or 0 when there is no command.
func (c *command) pid() int {
	if c == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// release lets the command run.
func (c *command) release() error {
	c.once.Do(func() { c.go_ <- true })
	return nil
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
