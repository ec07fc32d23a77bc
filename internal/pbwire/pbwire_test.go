package pbwire

import (
	"bytes"
	"testing"
)

// The bytes protoc's encoder gives for the same fields.
func TestAppend(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want []byte
	}{
		{"varint", Varint(nil, 1, 150), []byte{0x08, 0x96, 0x01}},
		{"varint zero", Varint(nil, 2, 0), []byte{0x10, 0x00}},
		{"large field number", Varint(nil, 16, 1), []byte{0x80, 0x01, 0x01}},
		{"max varint", AppendVarint(nil, 1<<64-1), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"string", String(nil, 2, "testing"), []byte{0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}},
		{"bytes", Bytes([]byte{0xaa}, 3, []byte{1, 2}), []byte{0xaa, 0x1a, 0x02, 0x01, 0x02}},
		{"empty", Bytes(nil, 1, nil), []byte{0x0a, 0x00}},
	}
	for _, tt := range tests {
		if !bytes.Equal(tt.got, tt.want) {
			t.Errorf("%s: % x, want % x", tt.name, tt.got, tt.want)
		}
	}
}
