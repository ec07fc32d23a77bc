package pcap

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// LinkTypeRaw is the link type of packets that start at their IP header,
// which is what skboutput() captures.
const LinkTypeRaw = 101

// snapLen is the snapshot length the file header declares.
const snapLen = 65535

const magic = 0xa1b2c3d4

// A Writer writes packets to a pcap file.
type Writer struct {
	w   io.Writer
	buf []byte
}

// NewWriter writes the file header to w and returns a writer of the
// packets that follow it.
func NewWriter(w io.Writer, linkType uint32) (*Writer, error) {
	hdr := make([]byte, 24)
	binary.NativeEndian.PutUint32(hdr[0:], magic)
	binary.NativeEndian.PutUint16(hdr[4:], 2)
	binary.NativeEndian.PutUint16(hdr[6:], 4)
	// Bytes 8 to 16 are the time zone and the timestamps' accuracy,
	// both 0 as every writer leaves them.
	binary.NativeEndian.PutUint32(hdr[16:], snapLen)
	binary.NativeEndian.PutUint32(hdr[20:], linkType)
	if _, err := w.Write(hdr); err != nil {
		return nil, fmt.Errorf("write pcap header: %w", err)
	}
	return &Writer{w: w}, nil
}

// WritePacket writes one packet captured at ts.
func (w *Writer) WritePacket(ts time.Time, data []byte) error {
	w.buf = w.buf[:0]
	w.buf = binary.NativeEndian.AppendUint32(w.buf, uint32(ts.Unix()))
	w.buf = binary.NativeEndian.AppendUint32(w.buf, uint32(ts.Nanosecond()/1000))
	w.buf = binary.NativeEndian.AppendUint32(w.buf, uint32(len(data)))
	w.buf = binary.NativeEndian.AppendUint32(w.buf, uint32(len(data)))
	w.buf = append(w.buf, data...)
	if _, err := w.w.Write(w.buf); err != nil {
		return fmt.Errorf("write pcap packet: %w", err)
	}
	return nil
}
