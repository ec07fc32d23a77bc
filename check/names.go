package check

import (
	"slices"
	"sort"
)

// IsBuiltin reports whether name is a builtin function or variable, for
// macro expansion: a call of a macro's name with arguments no
// definition of the macro takes goes to the builtin when there is one,
// as bpftrace's user macros override its own only signature by
// signature.
func IsBuiltin(name string) bool {
	_, ok := functions[name]
	return ok || slices.Contains(builtinNames, name)
}

// Functions returns the names of the builtin functions, sorted, the
// aggregations aside: the code generator keeps one table of how each is
// generated, and its tests compare that table's names with these.
func Functions() []string {
	names := make([]string, 0, len(functions))
	for n := range functions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Variables returns the names of the builtin variables, for the same
// comparison as Functions. Of the numbered ones, argN and sargN, it
// names the first two of each.
func Variables() []string {
	return slices.Clone(builtinNames)
}
