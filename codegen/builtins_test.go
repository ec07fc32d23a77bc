package codegen

import (
	"slices"
	"sort"
	"testing"

	"kinst.dev/kinst/check"
)

// noCode are the builtins the checker answers itself, so that the code
// generator never meets them: it folds them to constants or rewrites
// them as other expressions.
var noCode = map[string]string{
	"kaddr":               "the kernel symbol's address, a constant",
	"cgroupid":            "the cgroup's id, a constant",
	"strcap":              "the string's size, a constant",
	"default_str_length":  "a constant",
	"is_str":              "answered from the type, a constant",
	"is_ptr":              "answered from the type, a constant",
	"is_array":            "answered from the type, a constant",
	"is_integer":          "answered from the type, a constant",
	"is_unsigned_integer": "answered from the type, a constant",
	"is_literal":          "answered from the syntax, a constant",
	"typeinfo":            "rewritten as a record of the type's names",
	"has_cpid":            "whether -c was given, a constant",
	"kfunc_exist":         "answered from the kernel's BTF, a constant",
	"kfunc_allowed":       "answered from the kernel's BTF, a constant",
	"fail":                "always an error of the compilation",
	"ppid":                "rewritten as curtask->real_parent->pid",
	"pcomm":               "rewritten as curtask->real_parent->comm",
	"leader_tid":          "rewritten as curtask->group_leader->pid",
	"leader_comm":         "rewritten as curtask->group_leader->comm",
	"ncpus":               "the possible CPUs, a constant",
	"probetype":           "the probe's provider, a constant",
}

// TestBuiltinsCovered checks that the code generator's tables and the
// checker's name the same builtins, those in noCode aside: a builtin
// the checker learns is generated, or listed there as needing no code.
func TestBuiltinsCovered(t *testing.T) {
	funcs := make(map[string]bool)
	for n, f := range builtinFuncs {
		funcs[n] = f.stmt != nil || f.scalar != nil || f.mem != nil
	}
	vars := make(map[string]bool)
	for n, v := range builtinVars {
		vars[n] = v.scalar != nil || v.mem != nil || v.place != nil
	}
	// The numbered variables, argN and sargN, builtin parses.
	numbered := func(name string) bool {
		_, arg := argIndex(name)
		_, sarg := check.StackArgIndex(name)
		return arg || sarg
	}
	for _, tt := range []struct {
		what     string
		names    []string
		gens     map[string]bool
		numbered func(string) bool
	}{
		{"function", check.Functions(), funcs, func(string) bool { return false }},
		{"variable", check.Variables(), vars, numbered},
	} {
		for _, n := range tt.names {
			has, ok := tt.gens[n]
			_, none := noCode[n]
			switch {
			case ok && !has:
				t.Errorf("builtin %s %s has an entry that generates nothing", tt.what, n)
			case ok && none:
				t.Errorf("builtin %s %s is generated but listed as needing no code: %s", tt.what, n, noCode[n])
			case !ok && !none && !tt.numbered(n):
				t.Errorf("builtin %s %s is checked but never generated: give it an entry, or list it in noCode", tt.what, n)
			}
		}
		var extra []string
		for n := range tt.gens {
			if !slices.Contains(tt.names, n) {
				extra = append(extra, n)
			}
		}
		sort.Strings(extra)
		for _, n := range extra {
			t.Errorf("builtin %s %s is generated but the checker has none", tt.what, n)
		}
	}
	for n := range noCode {
		if !slices.Contains(check.Functions(), n) && !slices.Contains(check.Variables(), n) {
			t.Errorf("%s is listed in noCode but the checker has no such builtin", n)
		}
	}
}
