package elfsym

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
)

// LDCacheEntry is one library in /etc/ld.so.cache.
type LDCacheEntry struct {
	Name  string // the soname, e.g. "libc.so.6"
	Path  string // e.g. "/lib/x86_64-linux-gnu/libc.so.6"
	Flags int32  // glibc's flags: library type and architecture
}

const (
	ldCacheMagic = "glibc-ld.so.cache1.1"
	// Size of the new-format header: magic and version (20 bytes), the
	// entry count, the string table length, a flags byte with padding,
	// the extension offset and three unused words.
	ldCacheHeader = 48
	ldCacheEntry  = 24 // flags, key, value, osversion (4 each), hwcap (8)

	flagTypeMask = 0x00ff
	flagELFLibc6 = 0x0003
	flagArchMask = 0xff00
)

// nativeArchFlag is the architecture bits glibc records for libraries of
// the running architecture, or -1 to accept any.
var nativeArchFlag = map[string]int32{
	"amd64":   0x0300,
	"arm64":   0x0a00,
	"riscv64": 0x1000, // RISC-V, double-float ABI
	"386":     0x0000,
	"ppc64le": 0x0500,
	"s390x":   0x0400,
}

var errNoLDCache = errors.New("not an ld.so cache in the glibc 2.32+ format")

// ParseLDCache parses the contents of /etc/ld.so.cache in the format glibc
// has written since 2.32 (also found after the old-format part of files
// written by older ldconfigs). Entries keep the file's order, which
// ldconfig sorts with the preferred library of a name first.
func ParseLDCache(data []byte) ([]LDCacheEntry, error) {
	start := bytes.Index(data, []byte(ldCacheMagic))
	if start < 0 {
		return nil, errNoLDCache
	}
	// String offsets in the new format count from its header.
	cache := data[start:]
	if len(cache) < ldCacheHeader {
		return nil, fmt.Errorf("ld.so cache: truncated header")
	}
	le := binary.LittleEndian
	n := int(le.Uint32(cache[20:]))
	if n < 0 || n > (len(cache)-ldCacheHeader)/ldCacheEntry {
		return nil, fmt.Errorf("ld.so cache: %d entries do not fit in %d bytes", n, len(cache))
	}
	entries := make([]LDCacheEntry, 0, n)
	for i := range n {
		e := cache[ldCacheHeader+i*ldCacheEntry:]
		key, err := cString(cache, le.Uint32(e[4:]))
		if err != nil {
			return nil, fmt.Errorf("ld.so cache entry %d: %w", i, err)
		}
		val, err := cString(cache, le.Uint32(e[8:]))
		if err != nil {
			return nil, fmt.Errorf("ld.so cache entry %d: %w", i, err)
		}
		entries = append(entries, LDCacheEntry{Name: key, Path: val, Flags: int32(le.Uint32(e[0:]))})
	}
	return entries, nil
}

func cString(b []byte, off uint32) (string, error) {
	if int64(off) >= int64(len(b)) {
		return "", fmt.Errorf("string offset %d out of range", off)
	}
	end := bytes.IndexByte(b[off:], 0)
	if end < 0 {
		return "", fmt.Errorf("unterminated string at %d", off)
	}
	return string(b[off : int(off)+end]), nil
}

// native reports whether an entry is a libc6 library for the architecture
// kinst runs on.
func (e LDCacheEntry) native() bool {
	if e.Flags&flagTypeMask != flagELFLibc6 {
		return false
	}
	arch, ok := nativeArchFlag[runtime.GOARCH]
	return !ok || e.Flags&flagArchMask == arch
}

var ldCache struct {
	once    sync.Once
	entries []LDCacheEntry
	err     error
}

// loadLDCache reads /etc/ld.so.cache once per process.
func loadLDCache() ([]LDCacheEntry, error) {
	ldCache.once.Do(func() {
		data, err := os.ReadFile("/etc/ld.so.cache")
		if err != nil {
			ldCache.err = err
			return
		}
		ldCache.entries, ldCache.err = ParseLDCache(data)
	})
	return ldCache.entries, ldCache.err
}
