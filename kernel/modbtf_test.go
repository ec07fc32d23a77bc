package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// splitBTF encodes structs whose members have base types (by ID) as
// split BTF on top of a base whose string section is baseStrings bytes
// long: the format of /sys/kernel/btf/MODULE.
func splitBTF(baseStrings uint32, structs map[string][]splitMember) []byte {
	var types, strs bytes.Buffer
	str := func(s string) uint32 {
		off := baseStrings + uint32(strs.Len())
		strs.WriteString(s)
		strs.WriteByte(0)
		return off
	}
	le := binary.LittleEndian
	for name, members := range structs {
		const kindStruct = 4
		size := uint32(0)
		for _, m := range members {
			size = max(size, m.offset/8+m.size)
		}
		types.Write(le.AppendUint32(nil, str(name)))
		types.Write(le.AppendUint32(nil, kindStruct<<24|uint32(len(members))))
		types.Write(le.AppendUint32(nil, size))
		for _, m := range members {
			types.Write(le.AppendUint32(nil, str(m.name)))
			types.Write(le.AppendUint32(nil, m.typ))
			types.Write(le.AppendUint32(nil, m.offset))
		}
	}
	hdr := []byte{0x9f, 0xeb, 1, 0}
	hdr = le.AppendUint32(hdr, 24)
	hdr = le.AppendUint32(hdr, 0)
	hdr = le.AppendUint32(hdr, uint32(types.Len()))
	hdr = le.AppendUint32(hdr, uint32(types.Len()))
	hdr = le.AppendUint32(hdr, uint32(strs.Len()))
	return append(append(hdr, types.Bytes()...), strs.Bytes()...)
}

type splitMember struct {
	name         string
	typ          uint32 // a base type ID
	offset, size uint32 // in bits, in bytes
}

// TestModuleTypes: a type vmlinux lacks, or only declares, is found in
// the BTF of a loaded module; vmlinux's own definitions win; a module
// file that does not parse is skipped.
func TestModuleTypes(t *testing.T) {
	intT := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	longT := &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}
	b, err := btf.NewBuilder([]btf.Type{
		intT, longT,
		&btf.Fwd{Name: "declared_only", Kind: btf.FwdStruct},
		&btf.Struct{Name: "in_both", Size: 4, Members: []btf.Member{{Name: "v", Type: intT}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	vmlinux, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	baseStrings := binary.LittleEndian.Uint32(raw[20:24])
	mod := splitBTF(baseStrings, map[string][]splitMember{
		"mod_only":      {{"a", 1, 0, 4}, {"b", 2, 64, 8}},
		"declared_only": {{"x", 2, 0, 8}, {"y", 1, 64, 4}},
		"in_both":       {{"w", 2, 0, 8}},
	})
	for name, data := range map[string][]byte{"vmlinux": raw, "mymod": mod, "broken": []byte("not BTF")} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	loads := 0
	modules := func() []*btf.Spec {
		loads++
		return moduleSpecs(dir, func(m string) (*btf.Spec, error) {
			return btf.LoadSplitSpec(filepath.Join(dir, m), vmlinux)
		})
	}
	if ts := modules(); len(ts) != 1 {
		t.Fatalf("%d module specs, want mymod's alone", len(ts))
	}
	tests := []struct {
		name, want string // want: the members, or the error
	}{
		{"struct mod_only", "a:0 b:8 size 16"},
		{"mod_only", "a:0 b:8 size 16"},
		{"struct declared_only", "x:0 y:8 size 12"},
		{"struct in_both", "v:0 size 4"},
		{"union mod_only", "type union mod_only: no such type in kernel BTF"},
		{"struct nowhere", "type struct nowhere: no such type in kernel BTF"},
	}
	for _, tt := range tests {
		loads = 0
		typ, err := typeIn(vmlinux, modules, tt.name)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrNoType) {
				t.Errorf("%s: %v does not wrap ErrNoType", tt.name, err)
			}
		} else {
			s := typ.(*btf.Struct)
			for _, m := range s.Members {
				got += m.Name + ":" + strconv.Itoa(int(m.Offset.Bytes())) + " "
			}
			got += "size " + strconv.Itoa(int(s.Size))
		}
		if got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
		if tt.name == "struct in_both" && loads != 0 {
			t.Errorf("%s: module BTF read for a type vmlinux defines", tt.name)
		}
	}
}
