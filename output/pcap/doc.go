// Package pcap writes packets in the classic pcap file format that
// tcpdump and Wireshark read, as bpftrace's skboutput() writes them: the
// 24-byte file header (magic 0xa1b2c3d4 for microsecond timestamps,
// version 2.4, a snapshot length of 65535 and a link type), then each
// packet as a 16-byte record header (seconds, microseconds, captured
// and original length, both the bytes given) and the bytes, all in the
// host's byte order, as libpcap writes them.
package pcap
