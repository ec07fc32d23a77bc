// Package pprof writes maps keyed by stacks as pprof profiles
// (profile.proto, gzipped, as go tool pprof reads them) and as folded
// stacks for flamegraph.pl. It encodes the profile itself: the tests
// read it back with github.com/google/pprof/profile, whose package
// initialisation every run of kinst would pay for.
//
// Each entry of a map is a sample: its kernel stacks, leaf first, then
// its user stacks make the sample's locations; the other elements of its
// key become labels, numeric for integers; its value is the sample's
// value: count(), sum(), integers, min() and max() as they are, the total
// of avg() and stats(), the number of values of hist() and lhist().
// Kernel frames belong to a [kernel.kallsyms] mapping with the running
// kernel's build ID; user frames to the mapping of their file, with the
// file's build ID.
package pprof
