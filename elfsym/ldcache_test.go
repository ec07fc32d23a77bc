package elfsym

import (
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// buildLDCache writes a new-format cache holding entries, after an
// optional prefix standing in for an old-format part.
func buildLDCache(prefix string, entries []LDCacheEntry) []byte {
	le := binary.LittleEndian
	hdr := make([]byte, ldCacheHeader)
	copy(hdr, ldCacheMagic)
	le.PutUint32(hdr[20:], uint32(len(entries)))
	table := make([]byte, len(entries)*ldCacheEntry)
	var strs []byte
	strBase := ldCacheHeader + len(table)
	for i, e := range entries {
		rec := table[i*ldCacheEntry:]
		le.PutUint32(rec, uint32(e.Flags))
		le.PutUint32(rec[4:], uint32(strBase+len(strs)))
		strs = append(append(strs, e.Name...), 0)
		le.PutUint32(rec[8:], uint32(strBase+len(strs)))
		strs = append(append(strs, e.Path...), 0)
	}
	le.PutUint32(hdr[24:], uint32(len(strs)))
	return append(append(append([]byte(prefix), hdr...), table...), strs...)
}

func TestParseLDCache(t *testing.T) {
	entries := []LDCacheEntry{
		{"libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", 0x0303},
		{"libc.so.6", "/lib32/libc.so.6", 0x0003},
		{"libfoo.so", "/opt/libfoo.so", 0x0303},
	}
	for _, prefix := range []string{"", "ld.so-1.7.0\x00\x02\x00\x00\x00 old entries...."} {
		got, err := ParseLDCache(buildLDCache(prefix, entries))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, entries) {
			t.Errorf("prefix %q: got %+v, want %+v", prefix, got, entries)
		}
	}
	if runtime.GOARCH == "amd64" && (!entries[0].native() || entries[1].native()) {
		t.Errorf("native(): x86-64 entry %v, i386 entry %v; want true, false", entries[0].native(), entries[1].native())
	}
	if (LDCacheEntry{Flags: 0x0301}).native() {
		t.Error("a libc5 entry (type 1) counts as native")
	}
}

func TestParseLDCacheErrors(t *testing.T) {
	good := buildLDCache("", []LDCacheEntry{{"libc.so.6", "/lib/libc.so.6", 0x0303}})
	tests := []struct {
		data []byte
		want string
	}{
		{[]byte("ld.so-1.7.0 only the old format"), errNoLDCache.Error()},
		{good[:30], "ld.so cache: truncated header"},
		{good[:ldCacheHeader+10], "ld.so cache: 1 entries do not fit in 58 bytes"},
		{good[:len(good)-3], "ld.so cache entry 0: unterminated string at 82"},
	}
	for _, tt := range tests {
		_, err := ParseLDCache(tt.data)
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseLDCache(%d bytes) error = %v, want %q", len(tt.data), err, tt.want)
		}
	}
	bad := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(bad[ldCacheHeader+4:], 5000)
	if _, err := ParseLDCache(bad); err == nil || err.Error() != "ld.so cache entry 0: string offset 5000 out of range" {
		t.Errorf("bad key offset: error = %v", err)
	}
}

// TestLDCacheMatchesLdconfig compares the parse of the system cache with
// what `ldconfig -p` prints for it.
func TestLDCacheMatchesLdconfig(t *testing.T) {
	data, err := os.ReadFile("/etc/ld.so.cache")
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no /etc/ld.so.cache on this system")
	}
	if err != nil {
		t.Fatal(err)
	}
	ldconfig, err := exec.LookPath("ldconfig")
	if err != nil {
		t.Skip("no ldconfig to compare with")
	}
	out, err := exec.Command(ldconfig, "-p").Output()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(string(out), "\n")[1:] {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), " (")
		if !ok {
			continue
		}
		_, path, ok := strings.Cut(rest, ") => ")
		if ok {
			want = append(want, name+" "+path)
		}
	}
	entries, err := ParseLDCache(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name+" "+e.Path)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %d entries, ldconfig -p lists %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
