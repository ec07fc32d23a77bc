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
package check
