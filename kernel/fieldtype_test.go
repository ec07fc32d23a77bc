package kernel

import "testing"

func TestFieldInt(t *testing.T) {
	tests := []struct {
		f      Field
		size   int
		signed bool
		ok     bool
	}{
		// Syscall arguments sit in 8-byte slots marked unsigned.
		{Field{Type: "int", Size: 8}, 8, true, true},
		{Field{Type: "unsigned int", Size: 8}, 8, false, true},
		{Field{Type: "pid_t", Size: 8}, 8, false, true},
		{Field{Type: "u32", Size: 8}, 8, false, true},
		{Field{Type: "size_t", Size: 8}, 8, false, true},
		{Field{Type: "long", Size: 8, Signed: true}, 8, true, true},
		{Field{Type: "unsigned long", Size: 8}, 8, false, true},
		// Elsewhere the C type decides.
		{Field{Type: "int", Size: 4, Signed: true}, 4, true, true},
		{Field{Type: "pid_t", Size: 4, Signed: true}, 4, true, true},
		{Field{Type: "const int", Size: 4}, 4, true, true},
		{Field{Type: "unsigned char", Size: 1}, 1, false, true},
		{Field{Type: "char", Size: 1}, 1, true, true},
		{Field{Type: "bool", Size: 1}, 1, false, true},
		{Field{Type: "__u16", Size: 2}, 2, false, true},
		{Field{Type: "s64", Size: 8, Signed: true}, 8, true, true},
		{Field{Type: "long long unsigned int", Size: 8}, 8, false, true},
		// Not integers.
		{Field{Type: "const char *", Size: 8}, 0, false, false},
		{Field{Type: "char", Size: 16, Array: true, ArrayLen: 16}, 0, false, false},
		{Field{Type: "__data_loc char[]", Size: 4, DataLoc: true}, 0, false, false},
	}
	for _, tt := range tests {
		size, signed, ok := tt.f.Int()
		if size != tt.size || signed != tt.signed || ok != tt.ok {
			t.Errorf("%q size %d: Int() = %d, %v, %v; want %d, %v, %v", tt.f.Type, tt.f.Size, size, signed, ok, tt.size, tt.signed, tt.ok)
		}
	}
}

func TestFieldIntTypedefs(t *testing.T) {
	needBTF(t)
	tests := []struct {
		f      Field
		size   int
		signed bool
	}{
		// umode_t is an unsigned short: bpftrace reads 2 bytes of the slot.
		{Field{Type: "umode_t", Size: 8}, 2, false},
		{Field{Type: "loff_t", Size: 8}, 8, true},
		{Field{Type: "gfp_t", Size: 4}, 4, false},
		// Unknown to BTF: the format file's size and flag stand.
		{Field{Type: "kinst_unknown_t", Size: 4, Signed: true}, 4, true},
	}
	for _, tt := range tests {
		size, signed, ok := tt.f.Int()
		if size != tt.size || signed != tt.signed || !ok {
			t.Errorf("%q: Int() = %d, %v, %v; want %d, %v, true", tt.f.Type, size, signed, ok, tt.size, tt.signed)
		}
	}
}
