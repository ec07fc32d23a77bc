// Package perfetto writes traces in Perfetto's native protobuf format
// (perfetto.protos.Trace), which ui.perfetto.dev and trace_processor
// read: a track per process and one per thread under it, named, and on
// each thread's track a slice per call, nested as the calls nest, with
// the call's arguments and return value as debug annotations.
//
// The packets are written one after another, each a field of the Trace
// message, so a trace can be streamed and stopped at any packet. Times
// are CLOCK_MONOTONIC nanoseconds, what BPF's nsecs reads; the first
// packet is a snapshot of the monotonic, boot and real-time clocks that
// lets readers place them.
package perfetto
