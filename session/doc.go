// Package session runs compiled probe programs: it loads them into the
// kernel, runs BEGIN, attaches the probes, starts the -c command, carries
// out the actions probes send through the ring buffer (printf, print,
// exit, …), and on the way out detaches everything, runs END and prints
// the maps, whatever the reason for stopping.
package session
