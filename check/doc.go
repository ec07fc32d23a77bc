// Package check type-checks a parsed probe program against the kernel it
// will run on, and produces the checked program that code generation
// consumes.
//
// Like go/types, the checker does not change the syntax tree: what it
// learns (the type of every expression, the constant value of constant
// expressions, the shape of every map and variable, the parsed printf
// formats) goes into side tables in Info. Attach points are resolved to
// concrete targets through a Resolver, so the checker can be tested
// without a kernel.
//
// Type names resolve in one place, from three sources in this order: the
// program's own struct, union, enum and typedef declarations (laid out as
// a C compiler lays them out for x86-64 and arm64); in a uprobe, the
// probed binary's DWARF; then the kernel's BTF (vmlinux's, then, for a
// type vmlinux does not define, the loaded modules'). A program's declaration
// thus hides a kernel type of the same name, as in bpftrace 0.17, whose
// fields come from the program's definition. (0.17 still reports the
// kernel's size for sizeof of such a type once the program casts to it;
// kinst reports the declared size.) Enum constants resolve the same way:
// the program's, then the kernel's.
//
// Floating-point members (float, double, long double, from any source)
// take their C size and alignment, so the members after them sit where
// C puts them, but no expression may read one: kinst, like bpftrace,
// computes with integers only. A whole struct printed leaves them out in
// the 0.17 mode and shows them as null in the 0.26.1 mode, as each release
// does.
package check
