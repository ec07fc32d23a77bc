// Package kernel reports facts about the running Linux kernel that kinst's
// compiler and attacher need: the tracefs mount and its tracepoints with their
// record layouts, the kernel symbol table (/proc/kallsyms), the list of
// traceable functions, kernel BTF (function prototypes and type
// definitions), the kernel version and build configuration, which BPF
// program types, maps, helpers and attach mechanisms this kernel allows,
// and the live machine code of kernel functions, copied through BPF.
//
// Everything that is expensive to find out is computed on first use and
// cached for the life of the process, so callers may ask repeatedly.
package kernel
