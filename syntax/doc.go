// Package syntax turns kinst probe programs into syntax trees.
//
// The language is bpftrace's: a program is a list of probes, each a list
// of attach points, an optional /predicate/ and a block of statements.
// The package holds the scanner, the parser, the tree it builds and a
// printer that writes a tree back as source. Positions are byte offsets
// into one source file; File turns them into lines and columns, and
// Error renders a message with the offending line and a caret under it.
//
// Nothing here knows about types or the kernel: attach points are split
// into their provider and parts, and their meaning is decided later by
// package check.
package syntax
