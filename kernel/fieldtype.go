package kernel

import (
	"strings"

	"github.com/cilium/ebpf/btf"
)

// cInts gives the size and signedness of the integer type names that
// tracepoint format files use. char is signed, as on the BPF target.
var cInts = map[string]struct {
	size   int
	signed bool
}{
	"char": {1, true}, "signed char": {1, true}, "unsigned char": {1, false},
	"bool": {1, false}, "_Bool": {1, false},
	"short": {2, true}, "short int": {2, true}, "signed short": {2, true},
	"unsigned short": {2, false}, "unsigned short int": {2, false}, "short unsigned int": {2, false},
	"int": {4, true}, "signed": {4, true}, "signed int": {4, true},
	"unsigned": {4, false}, "unsigned int": {4, false},
	"long": {8, true}, "long int": {8, true}, "signed long": {8, true},
	"unsigned long": {8, false}, "unsigned long int": {8, false}, "long unsigned int": {8, false},
	"long long": {8, true}, "long long int": {8, true},
	"unsigned long long": {8, false}, "unsigned long long int": {8, false}, "long long unsigned int": {8, false},
	"u8": {1, false}, "__u8": {1, false}, "uint8_t": {1, false},
	"s8": {1, true}, "__s8": {1, true}, "int8_t": {1, true},
	"u16": {2, false}, "__u16": {2, false}, "uint16_t": {2, false},
	"s16": {2, true}, "__s16": {2, true}, "int16_t": {2, true},
	"u32": {4, false}, "__u32": {4, false}, "uint32_t": {4, false},
	"s32": {4, true}, "__s32": {4, true}, "int32_t": {4, true},
	"u64": {8, false}, "__u64": {8, false}, "uint64_t": {8, false},
	"s64": {8, true}, "__s64": {8, true}, "int64_t": {8, true},
	"pid_t": {4, true}, "uid_t": {4, false}, "gid_t": {4, false},
	"size_t": {8, false}, "ssize_t": {8, true},
}

// Int returns the integer type bpftrace 0.17 gives the field in args: its
// size in bytes and signedness. ok is false for pointers, arrays and
// __data_loc fields.
//
// The C type decides, not the format file's size and signed flag: a
// syscall's "int dfd" occupies 8 bytes marked unsigned, yet bpftrace reads
// it as s64 and prints -100 for AT_FDCWD. As in bpftrace, an int-like
// type in an 8-byte slot widens to 64 bits ("int" to s64; "unsigned int",
// "u32", "pid_t", "uid_t", "gid_t" to u64), while a typedef such as
// umode_t keeps its own size, which kernel BTF supplies. Types known
// neither here nor to BTF fall back to the format file's size and flag.
func (f Field) Int() (size int, signed bool, ok bool) {
	if f.Pointer() || f.Array || f.DataLoc {
		return 0, false, false
	}
	name := stripQualifiers(f.Type)
	if f.Size == 8 {
		switch name {
		case "int":
			return 8, true, true
		case "unsigned int", "unsigned", "u32", "pid_t", "uid_t", "gid_t":
			return 8, false, true
		}
	}
	if t, ok := cInts[name]; ok {
		return t.size, t.signed, true
	}
	if size, signed, ok := btfInt(name); ok {
		return size, signed, true
	}
	return f.Size, f.Signed, true
}

func stripQualifiers(t string) string {
	var kept []string
	for _, w := range strings.Fields(t) {
		if w != "const" && w != "volatile" {
			kept = append(kept, w)
		}
	}
	return strings.Join(kept, " ")
}

// btfInt resolves a type name (a typedef, or "enum x") to an integer
// through kernel BTF.
func btfInt(name string) (size int, signed bool, ok bool) {
	if _, err := KernelBTF(); err != nil {
		return 0, false, false
	}
	t, err := TypeByName(name)
	if err != nil {
		return 0, false, false
	}
	switch t := btf.UnderlyingType(t).(type) {
	case *btf.Int:
		return int(t.Size), t.Encoding == btf.Signed, true
	case *btf.Enum:
		return int(t.Size), t.Signed, true
	}
	return 0, false, false
}
