package pcap_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kinst.dev/kinst/output/pcap"
)

// The file is the header and each packet's record, byte for byte as
// libpcap writes them on this host.
func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkTypeRaw)
	if err != nil {
		t.Fatal(err)
	}
	packets := []struct {
		ts   time.Time
		data []byte
	}{
		{time.Unix(1700000000, 123456789), []byte{0x45, 0, 0, 20}},
		{time.Unix(1700000001, 999), nil},
	}
	for _, p := range packets {
		if err := w.WritePacket(p.ts, p.data); err != nil {
			t.Fatal(err)
		}
	}
	var want []byte
	for _, v := range []any{uint32(0xa1b2c3d4), uint16(2), uint16(4), int32(0), uint32(0), uint32(65535), uint32(101),
		uint32(1700000000), uint32(123456), uint32(4), uint32(4), []byte{0x45, 0, 0, 20},
		uint32(1700000001), uint32(0), uint32(0), uint32(0)} {
		want, _ = binary.Append(want, binary.NativeEndian, v)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("wrote\n% x\nwant\n% x", buf.Bytes(), want)
	}
}

// A file of one 20-byte IPv4 header: the 24-byte file header, then the
// 16-byte record header and the packet.
func ExampleWriter() {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.LinkTypeRaw)
	if err != nil {
		panic(err)
	}
	ip := []byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1}
	if err := w.WritePacket(time.Unix(1700000000, 5000), ip); err != nil {
		panic(err)
	}
	fmt.Println(buf.Len(), "bytes")
	// Output: 60 bytes
}

// tcpdump, the format's reference reader, reads a file of one UDP
// datagram over the loopback as such, at its time, where it is
// installed.
func TestTcpdumpReads(t *testing.T) {
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("no tcpdump on PATH")
	}
	path := filepath.Join(t.TempDir(), "udp.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcap.NewWriter(f, pcap.LinkTypeRaw)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte("kinst")
	ip := []byte{0x45, 0, 0, byte(28 + len(payload)), 0, 1, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1}
	udp := []byte{0x04, 0xd2, 0x16, 0x2e, 0, byte(8 + len(payload)), 0, 0}
	if err := w.WritePacket(time.Unix(1700000000, 123456000), append(append(ip, udp...), payload...)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd := exec.Command(tcpdump, "-n", "-tt", "-r", path)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tcpdump -r: %v\n%s", err, stderr.String())
	}
	if want := "1700000000.123456 IP 127.0.0.1.1234 > 127.0.0.1.5678: UDP, length 5\n"; string(out) != want {
		t.Errorf("tcpdump read %q, want %q", out, want)
	}
	if want := "reading from file " + path + ", link-type RAW (Raw IP), snapshot length 65535\n"; stderr.String() != want {
		t.Errorf("tcpdump said %q, want %q", stderr.String(), want)
	}
}
