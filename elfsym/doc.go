// Package elfsym resolves user-space probe targets and symbols the way
// bpftrace does: it finds the binary or library a uprobe names (by path,
// through the ld.so cache, the process's mappings or $PATH), lists and
// validates its function symbols, turns symbol+offset into the file offset
// a uprobe attaches at, and symbolizes addresses of a running process for
// ustack and usym, with their source lines and inlined functions from
// DWARF for bpftrace 0.26.1's show_debug_info.
//
// Symbols come from .symtab and .dynsym and, for stripped files, from the
// separate debug file found by build ID or .gnu_debuglink under
// /usr/lib/debug.
package elfsym
