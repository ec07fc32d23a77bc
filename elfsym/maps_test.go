package elfsym

import (
	"os"
	"reflect"
	"testing"
)

func TestParseMaps(t *testing.T) {
	text := `55d5c8a00000-55d5c8a02000 r--p 00000000 fd:00 1234                       /usr/bin/cat
55d5c8a02000-55d5c8a07000 r-xp 00002000 fd:00 1234                       /usr/bin/cat
7f2c4e000000-7f2c4e028000 r-xp 00026000 08:01 99  /tmp/my lib.so (deleted)
7f2c4f000000-7f2c4f021000 rw-p 00000000 00:00 0                          [heap]
7f2c50000000-7f2c50001000 rw-p 00000000 00:00 0 
7ffd1c9f5000-7ffd1c9f7000 r-xp 00000000 00:00 0                          [vdso]
`
	got, err := ParseMaps([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []Mapping{
		{Start: 0x55d5c8a00000, End: 0x55d5c8a02000, Perms: "r--p", Offset: 0, Dev: "fd:00", Inode: 1234, Path: "/usr/bin/cat"},
		{Start: 0x55d5c8a02000, End: 0x55d5c8a07000, Perms: "r-xp", Offset: 0x2000, Dev: "fd:00", Inode: 1234, Path: "/usr/bin/cat"},
		{Start: 0x7f2c4e000000, End: 0x7f2c4e028000, Perms: "r-xp", Offset: 0x26000, Dev: "08:01", Inode: 99, Path: "/tmp/my lib.so", Deleted: true},
		{Start: 0x7f2c4f000000, End: 0x7f2c4f021000, Perms: "rw-p", Dev: "00:00", Path: "[heap]"},
		{Start: 0x7f2c50000000, End: 0x7f2c50001000, Perms: "rw-p", Dev: "00:00"},
		{Start: 0x7ffd1c9f5000, End: 0x7ffd1c9f7000, Perms: "r-xp", Dev: "00:00", Path: "[vdso]"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseMaps:\n got %+v\nwant %+v", got, want)
	}
	files := []bool{true, true, true, false, false, false}
	for i, m := range got {
		if m.File() != files[i] {
			t.Errorf("%s: File() = %v", m.Path, m.File())
		}
	}
	if m, ok := findMapping(got, 0x55d5c8a02000); !ok || m.Offset != 0x2000 {
		t.Errorf("findMapping at a boundary = %+v, %v", m, ok)
	}
	if _, ok := findMapping(got, 0x7f2c4e028000); ok {
		t.Error("findMapping found an address in a gap")
	}
}

func TestParseMapsErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"zz-10 r--p 0 fd:00 1 /x\n", `maps line 1: bad start in "zz-10 r--p 0 fd:00 1 /x"`},
		{"10-5 r--p 0 fd:00 1 /x\n", `maps line 1: bad end in "10-5 r--p 0 fd:00 1 /x"`},
		{"10-20 r--p q fd:00 1 /x\n", `maps line 1: bad offset in "10-20 r--p q fd:00 1 /x"`},
		{"10-20 r--p 0 fd:00 x /x\n", `maps line 1: bad inode in "10-20 r--p 0 fd:00 x /x"`},
		{"10-20 r--p 0\n", `maps line 1: malformed line "10-20 r--p 0"`},
		{"\n1020 r--p 0 fd:00 1\n", `maps line 2: malformed line "1020 r--p 0 fd:00 1"`},
	}
	for _, tt := range tests {
		_, err := ParseMaps([]byte(tt.text))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseMaps(%q) error = %v, want %q", tt.text, err, tt.want)
		}
	}
}

func TestReadMapsSelf(t *testing.T) {
	maps, err := ReadMaps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	// The code of this test binary must be mapped executable.
	found := false
	for _, m := range maps {
		if m.Path == exe && m.Perms[2] == 'x' {
			found = true
		}
	}
	if !found {
		t.Errorf("no executable mapping of %s in %+v", exe, maps)
	}
	if _, err := ReadMaps(-5); err == nil {
		t.Error("ReadMaps(-5) succeeded")
	}
}
