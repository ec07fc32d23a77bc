package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst/internal/testenv"
	"kinst.dev/kinst/kernel"
)

// skboutput() writes the packets ip_output() is given, from their IP
// header, to pcap files: the workload's UDP datagrams over the loopback,
// whole in one file and past their IP and UDP headers (offset 28) in
// another. bpftrace wants the value assigned to a variable; kinst also
// takes the call as a statement. The host forbids fentry, so this runs
// in the guests.
func TestSkbOutput(t *testing.T) {
	t.Parallel()
	testenv.Require(t, testenv.Fentry, testenv.Ringbuf)
	dir := t.TempDir()
	whole, payloads := filepath.Join(dir, "whole.pcap"), filepath.Join(dir, "payload.pcap")
	const n, size = 5, 100
	prog := `fentry:ip_output /pid == cpid/ {
	$r = skboutput("` + whole + `", args->skb, args->skb->len, 0);
	@ret[$r] = count();
	skboutput("` + payloads + `", args->skb, args->skb->len, 28);
}`
	start := time.Now().Truncate(time.Microsecond)
	kinst(t, "-q", "-e", prog, "-c", workload(t)+" udp 5 100").want(t, 0, "\n\n@ret[0]: 5\n", "")
	end := time.Now()

	payload := make([]byte, size)
	for j := range payload {
		payload[j] = byte('a' + j%26)
	}
	for _, f := range []struct {
		path string
		size int
	}{{whole, 20 + 8 + size}, {payloads, size}} {
		packets := readPcap(t, f.path)
		if len(packets) != n {
			t.Fatalf("%s holds %d packets, want %d", f.path, len(packets), n)
		}
		for i, p := range packets {
			if len(p.data) != f.size || p.len != f.size || p.ts.Before(start) || p.ts.After(end) {
				t.Errorf("%s: packet %d of %d bytes (%d captured) at %v, want %d bytes between %v and %v",
					f.path, i, p.len, len(p.data), p.ts, f.size, start, end)
				continue
			}
			if !bytes.HasSuffix(p.data, payload) {
				t.Errorf("%s: packet %d ends % x, not the payload", f.path, i, p.data)
			}
			if f.path == whole {
				// IPv4 with a 20-byte header, UDP, from and to 127.0.0.1.
				ip := p.data
				if ip[0] != 0x45 || ip[9] != 17 || !bytes.Equal(ip[12:20], []byte{127, 0, 0, 1, 127, 0, 0, 1}) ||
					binary.BigEndian.Uint16(ip[2:]) != uint16(f.size) || binary.BigEndian.Uint16(ip[24:]) != 8+size {
					t.Errorf("packet %d is not a loopback UDP datagram of %d bytes: % x", i, size, ip[:28])
				}
			}
		}
	}
}

// Where the kernel refuses fentry, a program calling skboutput() gets
// the same located refusal as any other fentry program.
func TestSkbOutputRefused(t *testing.T) {
	t.Parallel()
	testenv.Root(t)
	if kernel.Available(kernel.FeatFentry) {
		t.Skip("this kernel allows fentry: TestSkbOutput runs skboutput()")
	}
	file := filepath.Join(t.TempDir(), "x.pcap")
	prog := `fentry:ip_output { skboutput("` + file + `", args->skb, args->skb->len, 0); }`
	plain := kinst(t, "-e", `fentry:ip_output { @n = count(); }`)
	r := kinst(t, "-e", prog)
	first, _, _ := strings.Cut(plain.stderr, "\n")
	if plain.code != 1 || !strings.HasPrefix(first, "-e:1:1: fentry ") {
		t.Fatalf("a plain fentry program: exit status %d, stderr:\n%s", plain.code, plain.stderr)
	}
	r.want(t, 1, "", first+"\n"+prog+"\n^~~~~~~~~~~~~~~~\n")
	if _, err := os.Stat(file); err == nil {
		t.Errorf("the refused program created %s", file)
	}
}

type packet struct {
	ts   time.Time
	len  int // the packet's length, as the record says
	data []byte
}

// readPcap reads a pcap file as skboutput() writes it: microsecond
// timestamps, raw IP packets, in this host's byte order.
func readPcap(t *testing.T, path string) []packet {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.NativeEndian
	if len(b) < 24 || le.Uint32(b) != 0xa1b2c3d4 || le.Uint16(b[4:]) != 2 || le.Uint16(b[6:]) != 4 ||
		le.Uint32(b[16:]) != 65535 || le.Uint32(b[20:]) != 101 {
		t.Fatalf("%s: not a pcap file of raw IP packets: % x", path, b[:min(len(b), 24)])
	}
	var packets []packet
	for b = b[24:]; len(b) > 0; {
		if len(b) < 16 {
			t.Fatalf("%s: %d bytes left after %d packets", path, len(b), len(packets))
		}
		caplen := int(le.Uint32(b[8:]))
		if len(b) < 16+caplen {
			t.Fatalf("%s: packet %d of %d bytes cut short", path, len(packets), caplen)
		}
		packets = append(packets, packet{
			ts:   time.Unix(int64(le.Uint32(b)), int64(le.Uint32(b[4:]))*1000),
			len:  int(le.Uint32(b[12:])),
			data: b[16 : 16+caplen],
		})
		b = b[16+caplen:]
	}
	return packets
}
