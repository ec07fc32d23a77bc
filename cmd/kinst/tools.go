package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	api "kinst.dev/kinst"
	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/kernel"
)

// features prints what this kernel allows.
func features(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kinst features", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("f", "text", "output format: text or json")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	all := kernel.ProbeAll()
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			fmt.Fprintf(stderr, "kinst: %v\n", err)
			return 1
		}
	case "text":
		tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
		for _, st := range all {
			state := "yes"
			detail := st.Value
			if !st.Available {
				state = "no"
				detail = st.Reason
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", st.Feature, state, detail)
		}
		tw.Flush()
	default:
		fmt.Fprintf(stderr, "kinst: invalid output format %q: use text or json\n", *format)
		return 2
	}
	return 0
}

// listProgramProbes prints the probes p attaches to, as bpftrace 0.26.1
// lists them for -l with a program: each once, BEGIN, END, self, test and
// bench probes left out; with -v, each with its arguments where -l gives them.
func listProgramProbes(p *api.Program, o attach.ListOptions, stdout, stderr io.Writer) int {
	seen := map[string]bool{}
	for _, probe := range p.Probes() {
		for _, t := range probe.Targets {
			provider, _, _ := strings.Cut(t, ":")
			switch provider {
			case "BEGIN", "END", "begin", "end", "self", "test", "bench":
				continue
			case "interval", "profile", "hardware", "software":
				// Listed as -l lists them, without the rate or count.
				t = t[:strings.LastIndexByte(t, ':')+1]
			}
			if seen[t] {
				continue
			}
			seen[t] = true
			// Listing fentry, fexit and raw tracepoint probes names
			// their module, as 0.26.1 lists them.
			named := provider == "fentry" || provider == "fexit" || provider == "rawtracepoint"
			if !o.Verbose && !named || attach.List(stdout, t, o) != nil {
				fmt.Fprintln(stdout, t)
			}
		}
	}
	return 0
}

// looksLikeFile says whether a -l argument that names no file looks
// like a file name all the same (a dot, and neither a colon nor a
// wildcard), which bpftrace 0.26.1 warns is taken as a pattern.
func looksLikeFile(arg string) bool {
	return strings.Contains(arg, ".") && !strings.ContainsAny(arg, ":*")
}

// isFile says whether path names a file, which -l reads as a program.
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// listProbes prints the probes matching pattern.
func listProbes(pattern string, o attach.ListOptions, stdout, stderr io.Writer) int {
	if err := attach.List(stdout, pattern, o); err != nil {
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 1
	}
	return 0
}
