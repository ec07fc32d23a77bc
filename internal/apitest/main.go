// Command apitest uses kinst.dev/kinst as a program outside its module
// does, through its exported API only, and checks what a real run does
// when the handler stops it, when a slow handler leaves a backlog, when
// the context ends it, how its records print, and that core() writes a
// core file from this program itself. It prints a line per
// check, PASS or FAIL, and exits with status 1 if any failed. It needs
// root.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"kinst.dev/kinst"
)

func main() {
	failed := false
	for _, c := range []struct {
		name  string
		check func() error
	}{
		{"stop in handler", stopInHandler},
		{"stop context", stopContext},
		{"context error", contextError},
		{"record strings", recordStrings},
		{"core file", coreFile},
	} {
		if err := c.check(); err != nil {
			fmt.Printf("FAIL %s: %v\n", c.name, err)
			failed = true
			continue
		}
		fmt.Printf("PASS %s\n", c.name)
	}
	if failed {
		os.Exit(1)
	}
}

// within returns what f returns, or an error once 10s have passed.
func within(what string, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s still blocked after 10s", what)
	}
}

// stopInHandler calls Stop from the handler with the probes attached:
// it returns nil at once, and the run ends with END run.
func stopInHandler() error {
	prog, err := kinst.Compile("stop.bt", []byte(`interval:ms:5 { printf("tick\n") } END { @end = 1 }`), nil)
	if err != nil {
		return err
	}
	runs := make(chan *kinst.Run, 1)
	stopped := make(chan error, 1)
	run, err := prog.Start(context.Background(), func(kinst.Record) {
		select {
		case run := <-runs:
			stopped <- run.Stop()
		default:
		}
	})
	if err != nil {
		return err
	}
	runs <- run
	if err := within("Wait", run.Wait); err != nil {
		return err
	}
	if err := <-stopped; err != nil {
		return fmt.Errorf("Stop in the handler returned %v", err)
	}
	m, err := run.Map("@end")
	if err != nil || len(m.Entries) != 1 {
		return fmt.Errorf("@end = %v, %v: END did not run", m, err)
	}
	return nil
}

// stopContext has a 200 ms handler take 100 records sent every 5 ms,
// then gives it 300 ms to stop: StopContext returns soon after with a
// DropError, and every record is handled, reported lost or counted as
// dropped.
func stopContext() error {
	const sent = 100
	prog, err := kinst.Compile("slow.bt", []byte(`interval:ms:5 /@n < 100/ { @n++; printf("tick\n") }`), nil)
	if err != nil {
		return err
	}
	var handled, lost uint64
	run, err := prog.Start(context.Background(), func(r kinst.Record) {
		switch r := r.(type) {
		case *kinst.Printf:
			handled++
			time.Sleep(200 * time.Millisecond)
		case *kinst.Lost:
			lost += r.Count
		}
	})
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m, err := run.Map("@n"); err == nil && len(m.Entries) == 1 && m.Entries[0].Value == int64(sent) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("interval:ms:5 did not fire %d times in 10s", sent)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = within("StopContext", func() error { return run.StopContext(ctx) })
	if d := time.Since(start); d > 3*time.Second {
		return fmt.Errorf("StopContext took %v", d)
	}
	var dropped *kinst.DropError
	if !errors.As(err, &dropped) || !errors.Is(err, context.DeadlineExceeded) || dropped.Count == 0 {
		return fmt.Errorf("StopContext returned %v, want a DropError matching context.DeadlineExceeded", err)
	}
	if handled+lost+dropped.Count != sent {
		return fmt.Errorf("%d handled, %d lost and %d dropped, want the %d sent", handled, lost, dropped.Count, sent)
	}
	return nil
}

// contextError cancels Start's context: Wait returns its error. A
// program's own exit() is no error.
func contextError() error {
	prog, err := kinst.Compile("ctx.bt", []byte(`interval:ms:5 { @ticks = count() }`), nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run, err := prog.Start(ctx, nil)
	if err != nil {
		return err
	}
	cancel()
	if err := within("Wait", run.Wait); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("Wait returned %v, want context.Canceled", err)
	}
	prog, err = kinst.Compile("exit.bt", []byte(`BEGIN { exit() }`), nil)
	if err != nil {
		return err
	}
	run, err = prog.Start(context.Background(), nil)
	if err != nil {
		return err
	}
	var exit *kinst.ExitError
	if err := run.Wait(); err != nil || errors.As(err, &exit) {
		return fmt.Errorf("Wait after exit() returned %v, want nil", err)
	}
	return nil
}

// recordStrings logs every record: each reads as bpftrace prints it.
func recordStrings() error {
	prog, err := kinst.Compile("print.bt", []byte(`BEGIN { printf("hi %d\n", 3); print((1, "a")); @m[2] = 5; print(@m); exit() }`), nil)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	logger := log.New(&buf, "", 0)
	run, err := prog.Start(context.Background(), func(r kinst.Record) { logger.Print(r) })
	if err != nil {
		return err
	}
	if err := run.Wait(); err != nil {
		return err
	}
	// log.Print ends the empty text of exit()'s record with a newline.
	if want := "hi 3\n(1, a)\n@m[2]: 5\n\n"; buf.String() != want {
		return fmt.Errorf("logged %q, want %q", buf.String(), want)
	}
	return nil
}

// coreFile runs a program whose core() dumps a command where a uprobe
// stopped it in clock_nanosleep: this program writes the core file
// itself, with no kinst command to run, and gdb reads the command's
// stack from it.
func coreFile() error {
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		return fmt.Errorf("no gdb to read the core file: %w", err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "apitest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	core := filepath.Join(dir, "core")
	src := fmt.Sprintf(`uprobe:libc:clock_nanosleep /pid == cpid/ { core("%s"); }`, core)
	prog, err := kinst.Compile("core.bt", []byte(src), &kinst.Options{Unsafe: true, Command: []string{sleep, "0.2"}})
	if err != nil {
		return err
	}
	var said []string
	run, err := prog.Start(context.Background(), func(r kinst.Record) {
		if s, ok := r.(*kinst.System); ok {
			said = append(said, s.Output)
		}
	})
	if err != nil {
		return err
	}
	if err := within("Wait", run.Wait); err != nil {
		return err
	}
	wrote := regexp.MustCompile(`^core of pid \d+ written to ` + regexp.QuoteMeta(core) + "\n$")
	if len(said) != 1 || !wrote.MatchString(said[0]) {
		return fmt.Errorf("core() said %q, want that it wrote %s", said, core)
	}
	out, err := exec.Command(gdb, "-batch", "-ex", "bt", sleep, core).CombinedOutput()
	if err != nil {
		return fmt.Errorf("gdb: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^#0 +0x[0-9a-f]+ in \S*clock_nanosleep`).Match(out) {
		return fmt.Errorf("gdb shows no stack stopped in clock_nanosleep:\n%s", out)
	}
	return nil
}
