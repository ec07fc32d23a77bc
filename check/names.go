package check

import "slices"

// IsBuiltin reports whether name is a builtin function or variable, for
// macro expansion: a call of a macro's name with arguments no
// definition of the macro takes goes to the builtin when there is one,
// as bpftrace's user macros override its own only signature by
// signature.
func IsBuiltin(name string) bool {
	_, ok := functions[name]
	return ok || slices.Contains(builtinNames, name)
}
