// Package output prints what a running kinst program produces, byte for
// byte as bpftrace 0.17 prints it, as text or as JSON lines (-f json).
//
// The runtime decodes map entries and ring-buffer records into Values and
// hands them to a Writer: printf, time, join, cat and system messages,
// print() of values and maps, the maps printed at exit, lost events,
// helper errors and the "Attaching N probes..." line. Format parses
// printf-style format strings the way bpftrace 0.17 does, for the checker
// to validate calls and for the Writer to render them; Strftime renders
// time() and strftime() formats as glibc's strftime does.
//
// Where bpftrace 0.17 leaves an order to chance (entries whose sort values
// tie come out in the kernel's hash order), this package picks one fixed
// order; everywhere else it reproduces 0.17, quirks included.
package output
