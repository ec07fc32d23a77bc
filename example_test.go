package kinst_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"kinst.dev/kinst"
	"kinst.dev/kinst/syntax"
)

// A program's printf() records reach the handler with their arguments
// decoded.
func Example() {
	prog, err := kinst.Compile("hello.bt", []byte(`
		BEGIN { printf("%s is %d\n", "answer", 42); exit() }
	`), nil)
	if err != nil {
		log.Fatal(err)
	}
	run, err := prog.Start(context.Background(), func(r kinst.Record) {
		switch r := r.(type) {
		case *kinst.Printf:
			fmt.Printf("printf %q %v: %s", r.Format, r.Args, r.Text)
		case *kinst.Exit:
			fmt.Println("exit")
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// printf "%s is %d\n" [answer 42]: answer is 42
	// exit
}

// Records of a tracepoint reach the handler as the kernel sends them;
// Stop hands over those still queued before it returns.
func ExampleProgram_Start() {
	prog, err := kinst.Compile("trace.bt", []byte(`
		tracepoint:syscalls:sys_enter_getppid /pid == $1/ { printf("%s\n", probe) }
		END { printf("done\n") }
	`), &kinst.Options{Params: []string{strconv.Itoa(os.Getpid())}})
	if err != nil {
		log.Fatal(err)
	}
	run, err := prog.Start(context.Background(), func(r kinst.Record) {
		if p, ok := r.(*kinst.Printf); ok {
			fmt.Print(p.Text)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	syscall.Getppid()
	syscall.Getppid()
	if err := run.Stop(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// tracepoint:syscalls:sys_enter_getppid
	// tracepoint:syscalls:sys_enter_getppid
	// done
}

// A handler that lags behind the records has StopContext bound the
// hand-over: once its context is done, the records left are dropped and
// the error counts them.
func ExampleRun_StopContext() {
	prog, err := kinst.Compile("slow.bt", []byte(`
		tracepoint:syscalls:sys_enter_getppid /pid == $1/ { printf("call\n") }
	`), &kinst.Options{Params: []string{strconv.Itoa(os.Getpid())}})
	if err != nil {
		log.Fatal(err)
	}
	handled := 0
	run, err := prog.Start(context.Background(), func(r kinst.Record) {
		handled++
		time.Sleep(100 * time.Millisecond)
	})
	if err != nil {
		log.Fatal(err)
	}
	for range 5 {
		syscall.Getppid()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err = run.StopContext(ctx)
	var dropped *kinst.DropError
	if errors.As(err, &dropped) {
		fmt.Println(handled+int(dropped.Count), "records,", errors.Is(err, context.DeadlineExceeded))
	}
	// Output:
	// 5 records, true
}

// A tracepoint counts this process's getppid calls; the map is read
// while the probe is attached and again after END.
func ExampleRun_Map() {
	prog, err := kinst.Compile("getppid.bt", []byte(`
		tracepoint:syscalls:sys_enter_getppid /pid == $1/ { @calls = count() }
		END { @ended = 1 }
	`), &kinst.Options{Params: []string{strconv.Itoa(os.Getpid())}})
	if err != nil {
		log.Fatal(err)
	}
	run, err := prog.Start(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		syscall.Getppid()
	}
	calls, err := run.Map("@calls")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("while running:", calls.Entries[0].Value)
	syscall.Getppid()
	if err := run.Stop(); err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"@calls", "@ended"} {
		m, err := run.Map(name)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("after END:", name, m.Entries[0].Value)
	}
	_, err = run.Map("@nothing")
	fmt.Println(errors.Is(err, kinst.ErrNoMap), err)
	// Output:
	// while running: 3
	// after END: @calls 4
	// after END: @ended 1
	// true map @nothing: no such map
}

// Histograms come back as buckets with their bounds; keys as Go values.
func ExampleMap() {
	prog, err := kinst.Compile("hist.bt", []byte(`
		BEGIN {
			@h = hist(0); @h = hist(1); @h = hist(5); @h = hist(7);
			@by["b", 2] = sum(20); @by["a", 1] = sum(10);
			@lat = avg(10); @lat = avg(21);
			exit()
		}
	`), nil)
	if err != nil {
		log.Fatal(err)
	}
	run, err := prog.Start(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		log.Fatal(err)
	}
	h, _ := run.Map("@h")
	for _, b := range h.Entries[0].Value.(kinst.Histogram).Buckets {
		fmt.Printf("[%d, %d]: %d\n", b.Min, b.Max, b.Count)
	}
	by, _ := run.Map("@by")
	for _, e := range by.Entries {
		fmt.Println(e.Key, e.Value)
	}
	lat, _ := run.Map("@lat")
	fmt.Println(lat.Entries[0].Value.(kinst.Stats).Mean())
	// Output:
	// [0, 0]: 1
	// [1, 1]: 1
	// [4, 7]: 2
	// [a 1] 10
	// [b 2] 20
	// 15
}

// A program's probes and maps are known before it runs.
func ExampleProgram_Probes() {
	prog, err := kinst.Compile("probes.bt", []byte(`
		begin { @start = nsecs }
		tracepoint:sched:sched_process_exec { @execs[comm] = count() }
		interval:s:1 { exit() }
	`), nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range prog.Probes() {
		fmt.Println(p.Name, p.Targets, p.Mechanism)
	}
	for _, m := range prog.Maps() {
		fmt.Println(m.Name, m.Kind, m.Keys, m.Value)
	}
	// Output:
	// begin [begin] test_run
	// tracepoint:sched:sched_process_exec [tracepoint:sched:sched_process_exec] tracepoint
	// interval:s:1 [interval:s:1] perf_event
	// @start integer [] uint64
	// @execs count [string[16]] count
}

// Errors in a program come as a list, each with its position.
func ExampleCompile_errors() {
	_, err := kinst.Compile("bad.bt", []byte(`BEGIN { @x = 1 + "a"; printf("%d\n") }`), nil)
	var list syntax.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Println(e)
		}
	}
	// Output:
	// bad.bt:1:14: invalid operation: int8 + string[2] (strings support only == and !=)
	// bad.bt:1:23: printf(): not enough arguments for format string (0 supplied, 1 expected)
}

// With RunOptions.Output a run prints as bpftrace prints: the records as
// they come, then the maps, here as JSON lines. Stdout takes the blank
// lines bpftrace prints before the maps.
func ExampleProgram_StartWith() {
	prog, err := kinst.Compile("hello.bt", []byte(`
		BEGIN { printf("hello\n"); @n[1] = 2; exit() }
	`), nil)
	if err != nil {
		log.Fatal(err)
	}
	run, err := prog.StartWith(context.Background(), nil, &kinst.RunOptions{Output: os.Stdout, JSON: true, Stdout: io.Discard})
	if err != nil {
		log.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"type": "attached_probes", "count": 1, "data": {"probes": 1}}
	// {"type": "printf", "data": "hello\n"}
	// {"type": "map", "data": {"@n": {"1": 2}}}
}

// Options.Command runs a command under tracing, as kinst -c does: the
// program sees its pid as cpid, and the run ends when it exits.
func ExampleOptions_command() {
	prog, err := kinst.Compile("cmd.bt", []byte(`
		tracepoint:syscalls:sys_enter_exit_group /pid == cpid/ { printf("%s exits\n", comm) }
		tracepoint:sched:sched_process_exit /pid == cpid/ { @exits = count() }
	`), &kinst.Options{Command: []string{"/bin/true"}})
	if err != nil {
		log.Fatal(err)
	}
	var out strings.Builder
	run, err := prog.StartWith(context.Background(), nil, &kinst.RunOptions{Output: &out, Quiet: true})
	if err != nil {
		log.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		log.Fatal(err)
	}
	// Two blank lines come before the maps, which an example's output
	// cannot show.
	fmt.Print(strings.Replace(out.String(), "\n\n\n", "\n--\n", 1))
	// Output:
	// true exits
	// --
	// @exits: 1
}

// Load asks the kernel's verifier about every probe without attaching
// any, as kinst --dry-run does.
func ExampleProgram_Load() {
	prog, err := kinst.Compile("ok.bt", []byte(`
		tracepoint:syscalls:sys_enter_openat { @[comm] = count() }
	`), nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(prog.Load())
	// Output:
	// <nil>
}
