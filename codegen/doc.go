// Package codegen turns a checked program into BPF: one program per
// checked probe, the maps its @variables live in, and the table of
// actions (printf, print, exit, …) that probes ask user space to carry
// out through a ring buffer.
//
// Code is generated directly as cilium/ebpf asm instructions, without an
// intermediate representation. Scalars are computed in registers: R6
// holds the context, R7 and R8 hold temporaries that must survive helper
// calls (more spill to the stack), R9 points at the probe's part of a
// per-CPU scratch map when the probe needs more memory than the 512-byte
// stack gives (probes that never run nested in one another on a CPU
// share one part, the others have one each), and R0–R5 are used within
// one operation. Every integer in
// a register is kept sign- or zero-extended to 64 bits according to its
// type, so operations never need to know where a value came from.
package codegen
