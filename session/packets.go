package session

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf/perf"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/output/pcap"
)

// DefaultPacketPages is how many pages of packets skboutput() may queue
// on each CPU unless BPFTRACE_PERF_RB_PAGES says otherwise, as in
// bpftrace 0.17.
const DefaultPacketPages = 64

// packets writes what skboutput() sends to its pcap files, from a
// goroutine reading the perf event array the kernel writes packets to:
// bpf_skb_output writes nowhere else.
type packets struct {
	out     *codegen.Output
	rd      *perf.Reader
	writers []*pcap.Writer // by skboutput() id
	files   []*os.File
	bufs    []*bufio.Writer // of files
	boot    time.Time
	lost    uint64
	err     error // the first failure to read or write
	done    chan struct{}
}

// startPackets creates the pcap files, as bpftrace does before anything
// runs, and starts reading packets.
func (s *Session) startPackets() error {
	if len(s.out.SkbOutputs) == 0 {
		return nil
	}
	p := &packets{out: s.out, boot: s.dec.bootTime(), done: make(chan struct{})}
	byPath := map[string]*pcap.Writer{}
	for _, o := range s.out.SkbOutputs {
		w := byPath[o.Path]
		if w == nil {
			f, err := os.Create(o.Path)
			if err != nil {
				p.closeFiles()
				return fmt.Errorf("skboutput: %w", err)
			}
			buf := bufio.NewWriter(f)
			p.files, p.bufs = append(p.files, f), append(p.bufs, buf)
			if w, err = pcap.NewWriter(buf, pcap.LinkTypeRaw); err != nil {
				p.closeFiles()
				return fmt.Errorf("skboutput: %s: %w", o.Path, err)
			}
			byPath[o.Path] = w
		}
		p.writers = append(p.writers, w)
	}
	pages := s.opts.PacketPages
	if pages == 0 {
		pages = DefaultPacketPages
	}
	rd, err := perf.NewReader(s.coll.Maps[codegen.PacketsMap], pages*os.Getpagesize())
	if err != nil {
		p.closeFiles()
		return fmt.Errorf("skboutput: open packet buffers: %w", err)
	}
	p.rd = rd
	s.packets = p
	go p.run()
	return nil
}

func (p *packets) run() {
	defer close(p.done)
	var rec perf.Record
	for {
		err := p.rd.ReadInto(&rec)
		switch {
		case errors.Is(err, perf.ErrFlushed), errors.Is(err, perf.ErrClosed):
			return
		case err != nil:
			p.err = fmt.Errorf("skboutput: read packets: %w", err)
			return
		}
		p.lost += rec.LostSamples
		if len(rec.RawSample) > 0 {
			p.write(rec.RawSample)
		}
	}
}

// write writes one packet record: its header, then the bytes captured,
// which the perf buffer pads to a multiple of 8 that the header's
// length undoes. The offset the call gave is left out, and a packet
// with nothing past it is not written, as in bpftrace.
func (p *packets) write(raw []byte) {
	if len(raw) < codegen.PacketHeaderSize {
		return
	}
	id := binary.NativeEndian.Uint64(raw)
	ns := binary.NativeEndian.Uint64(raw[8:])
	n := binary.NativeEndian.Uint64(raw[16:])
	data := raw[codegen.PacketHeaderSize:]
	if id >= uint64(len(p.writers)) {
		return
	}
	if n < uint64(len(data)) {
		data = data[:n]
	}
	off := p.out.SkbOutputs[id].Offset
	if off >= uint64(len(data)) {
		return
	}
	if err := p.writers[id].WritePacket(p.boot.Add(time.Duration(ns)), data[off:]); err != nil && p.err == nil {
		p.err = fmt.Errorf("skboutput: %s: %w", p.out.SkbOutputs[id].Path, err)
	}
}

// stop writes the packets still queued once the probes are detached,
// and closes the files.
func (p *packets) stop() (lost uint64, err error) {
	if ferr := p.rd.Flush(); ferr != nil {
		p.rd.Close()
	}
	<-p.done
	p.rd.Close()
	return p.lost, errors.Join(p.err, p.closeFiles())
}

func (p *packets) closeFiles() error {
	var errs []error
	for i, f := range p.files {
		if i < len(p.bufs) {
			errs = append(errs, p.bufs[i].Flush())
		}
		errs = append(errs, f.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("skboutput: %w", err)
	}
	return nil
}
