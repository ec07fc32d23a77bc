// Package attach connects checked probes to the kernel: it resolves
// attach points to concrete targets (expanding wildcards against
// tracefs, kallsyms, BTF, ELF symbol tables and USDT notes), lists what
// can be probed, and attaches loaded programs with the cheapest mechanism
// the kernel offers, detaching everything again on every path out.
package attach
