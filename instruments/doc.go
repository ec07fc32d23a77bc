// Package instruments holds kinst's classic instruments: trace (a
// watchpoint log), count, latency (wall and on-CPU time), nullify,
// blocks, and break (a conditional breakpoint that stops a process and
// dumps its core). Each is built on kinst's compiler: it writes a kinst
// program, which --show prints so that users can learn from it and
// extend it, and runs it through the same pipeline and runtime as
// kinst -e, rendering the results its own way.
package instruments
