// Package bpfelf writes a compiled collection of BPF programs and maps
// as a relocatable BPF ELF object, the kind clang emits, in libbpf's
// conventions: libbpf loads it, and cilium/ebpf's LoadCollectionSpec
// reads it.
//
// Each program is a section of its own named for its attach type, in
// libbpf's convention ("tracepoint/syscalls/sys_enter_read",
// "fentry/vfs_read", "kprobe"), and a global function symbol named by
// its key in the collection. Maps are BTF-defined: global objects in the
// .maps section described by the .BTF section, named by their keys; a
// program's references to them are R_BPF_64_64 relocations on its
// 64-bit immediate loads. The license goes in the license section.
//
// A map the programs read by address (a direct value load, as of a
// counter the programs bump in place) cannot be a .maps entry: ELF
// expresses such loads only into data sections, single-entry arrays.
// Such a map is written as the data section DataSection(key), and
// LoadCollectionSpec keys it, and names it in the instructions, by that
// section's name.
//
// Only what the format can say is written: programs and maps carrying
// more (initial map contents, inner maps, pinning, kfunc calls, calls
// between programs) are refused with an error wrapping ErrUnsupported.
package bpfelf
