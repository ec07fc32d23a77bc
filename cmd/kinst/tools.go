package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"kinst.dev/kinst/attach"
	"kinst.dev/kinst/check"
	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/kernel"
	"kinst.dev/kinst/syntax"
)

// kernelTypes is the checker's view of kernel types and symbols.
type kernelTypes = attach.Kernel

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
		fmt.Fprintf(stderr, "kinst: unknown output format %q: use text or json\n", *format)
		return 2
	}
	return 0
}

// listProbes prints the probes matching pattern.
func listProbes(pattern string, verbose bool, stdout, stderr io.Writer) int {
	if err := attach.List(stdout, pattern, verbose); err != nil {
		fmt.Fprintf(stderr, "kinst: %v\n", err)
		return 1
	}
	return 0
}

// dumpTypes prints every checked probe's expressions with their types.
func dumpTypes(w io.Writer, prog *check.Program) {
	fmt.Fprintln(w, "maps:")
	for _, m := range prog.Maps {
		fmt.Fprintf(w, "  %s[%v]: %s\n", m.Display(), m.Keys, m.Value)
	}
	for _, p := range prog.Probes {
		fmt.Fprintf(w, "probe %s (%d targets):\n", p.Targets[0].FullName(), len(p.Targets))
		names := make([]string, 0, len(p.Vars))
		for n := range p.Vars {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "  $%s: %s\n", n, p.Vars[n].Type)
		}
		syntax.Inspect(p.Syntax.Body, func(n syntax.Node) bool {
			x, ok := n.(syntax.Expr)
			if !ok {
				return true
			}
			if t := p.Types[x]; t != nil {
				pos := prog.Syntax.File.Position(x.Pos())
				fmt.Fprintf(w, "  %d:%d  %s  :: %s\n", pos.Line, pos.Column, syntax.String(x), t)
			}
			return true
		})
	}
}

// dumpBPF prints each program's instructions, each run of them under
// the source line it came from, with the mechanism chosen and why.
func dumpBPF(w io.Writer, out *codegen.Output) {
	for _, p := range out.Programs {
		dumpProgram(w, out, p)
		if p.Fallback != nil {
			fmt.Fprintln(w, "fallback if the kernel refuses the trampoline:")
			dumpProgram(w, out, p.Fallback)
		}
	}
}

func dumpProgram(w io.Writer, out *codegen.Output, p *codegen.Program) {
	spec := p.Spec(out)
	fmt.Fprintf(w, "program %s: %s, %d targets, %s, %s: %s\n", p.Name, p.Targets[0].FullName(), len(p.Targets), spec.Type, p.Mechanism, p.Why)
	lastLine := 0
	slot := 0
	for _, ins := range spec.Instructions {
		if slot < len(p.Pos) && p.Pos[slot].IsValid() {
			pos := out.File.Position(p.Pos[slot])
			if pos.Line != lastLine {
				fmt.Fprintf(w, "; %d: %s\n", pos.Line, out.File.Line(pos.Line))
				lastLine = pos.Line
			}
		}
		if sym := ins.Symbol(); sym != "" {
			fmt.Fprintf(w, "%s:\n", sym)
		}
		fmt.Fprintf(w, "  %4d: %v\n", slot, ins)
		slot += int(ins.Width() / 8)
	}
}
