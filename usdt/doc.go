// Package usdt reads the statically defined tracing probes that
// <sys/sdt.h> (SystemTap's, which DTrace-style providers and USDT tools
// share) leaves in an ELF file: one note in .note.stapsdt per probe site,
// naming its provider and probe, the address of the nop that marks the
// site, an optional semaphore that tells the program the probe is
// enabled, and the operands of its arguments as the assembler wrote them.
//
// Read lists a file's probes, with their addresses adjusted for a file
// prelink moved (.stapsdt.base) and turned into the file offsets uprobes
// attach at. ParseArgs decodes the x86-64 operand strings, such as
// "-4@%esi 8@$5 -8@-24(%rbp) 4@8+counter(%rip)", into Args that say
// where each argument lives when the probe fires and how wide it is.
package usdt
