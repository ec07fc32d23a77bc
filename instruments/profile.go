package instruments

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"kinst.dev/kinst"
)

func init() {
	register(&Command{
		Name:    "profile",
		Summary: "sample on-CPU stacks, kernel and user, into a pprof profile or folded stacks",
		Run:     profile,
	})
}

// profileMap is the map the profile program samples into; its key
// elements before the stacks are labelled as profileLabels.
const profileMap = "@samples"

var profileLabels = []string{"pid", "comm", "thread"}

func profile(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := common{Formats: []string{"pprof", "folded"}}
	fs := c.flags("profile", stderr,
		"usage: kinst profile [--hz N] [--pid PID] [--comm NAME] [-c CMD] [--duration D] [-f pprof|folded] [-o FILE] [--show]",
		"Samples the stacks of the processes on CPU, the whole machine's by default, until --duration, the end of -c CMD or Ctrl-C.",
		"-f pprof (the default) writes a gzipped profile.proto to -o FILE for go tool pprof; -f folded writes folded stacks for flamegraph.pl.",
	)
	hz := fs.Int("hz", 99, "samples a second on each CPU")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError("profile takes no arguments, found %q", pos[0])
	}
	if *hz <= 0 {
		return usageError("--hz %d: give a positive number of samples a second", *hz)
	}
	if c.Format == "pprof" && c.Output == "" && !c.Show {
		return usageError("-f pprof writes a binary profile: give -o FILE")
	}
	start := time.Now()
	// The program names each process when it first samples it, on CPU
	// then: its mappings are read at once, so that its stacks resolve
	// even once it has exited, before the profile is written.
	var run *kinst.Run
	hooks := runHooks{
		Attached: func(r *kinst.Run) { run = r },
		Printf: func(_ io.Writer, _ string, args []kinst.Value) error {
			run.KeepSymbols(int(args[0].Int())) // a process gone already stays unresolved
			return nil
		},
	}
	hooks.ExitMaps = func(w io.Writer, maps []*kinst.Map) error {
		if c.Format == "folded" {
			for _, m := range maps {
				if m.Name == profileMap {
					return kinst.WriteFolded(w, m, []int{1})
				}
			}
			return nil
		}
		return kinst.WriteProfile(w, maps, kinst.ProfileOptions{
			Maps:     []string{profileMap},
			Labels:   profileLabels,
			Period:   time.Second / time.Duration(*hz),
			Start:    start,
			Duration: time.Since(start),
		})
	}
	return c.run(ctx, "profile", profileProgram(&c, *hz), hooks, stdout, stderr)
}

// profileProgram counts the stacks on CPU at each sample, and sends the
// pid of each process the first time it samples it; the idle task (pid
// 0) is left out.
func profileProgram(c *common, hz int) string {
	var b strings.Builder
	cond := c.predicate()
	if cond == "" {
		cond = "pid != 0"
	}
	fmt.Fprintf(&b, "profile:hz:%d%s {\n\t%s[pid, comm, tid, kstack, ustack] = count();\n", hz, predClause(cond), profileMap)
	b.WriteString("\tif (@__seen[pid] == 0) {\n\t\t@__seen[pid] = 1;\n\t\tprintf(\"%d\\n\", pid);\n\t}\n}\n")
	if stop := c.stop(); stop != "" {
		b.WriteString("\n" + stop)
	}
	return b.String()
}
