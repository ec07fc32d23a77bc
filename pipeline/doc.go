// Package pipeline runs kinst's stages in order, source to syntax tree to
// checked program to BPF, against the running kernel: it is what the
// kinst command and its instruments share. Each stage can be printed as
// it passes.
package pipeline
