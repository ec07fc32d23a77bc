package cfg

import "testing"

// TestDecodeSystem covers instructions the kernel uses that x86asm does
// not decode, some of which it reads as a bare rep prefix.
func TestDecodeSystem(t *testing.T) {
	for _, tc := range []struct {
		code []byte
		text string
		n    int
	}{
		{[]byte{0xf3, 0x0f, 0x1e, 0xfa}, "endbr64", 4},
		{[]byte{0xf3, 0x0f, 0x1e, 0xfb}, "endbr32", 4},
		{[]byte{0x0f, 0x01, 0xca}, "clac", 3},
		{[]byte{0x0f, 0x01, 0xcb}, "stac", 3},
		{[]byte{0x0f, 0x01, 0xfe}, "invlpgb", 3},
		{[]byte{0x0f, 0x01, 0xff}, "tlbsync", 3},
		{[]byte{0xf3, 0x0f, 0xc7, 0xf8}, "rdpid %rax", 4},
		{[]byte{0xf3, 0x41, 0x0f, 0xc7, 0xf9}, "rdpid %r9", 5},
		{[]byte{0x48, 0x0f, 0xc7, 0xf8}, "rdseed %rax", 4},
		{[]byte{0x0f, 0xc7, 0xf2}, "rdrand %edx", 3},
		{[]byte{0xf3, 0x48, 0x0f, 0x1e, 0xc8}, "rdssp %rax", 5},
		{[]byte{0xf2, 0x0f, 0x00, 0xf7}, "lkgs %di", 4},
		{[]byte{0x66, 0x0f, 0xae, 0xf1}, "tpause %ecx", 4},
		{[]byte{0xf2, 0x0f, 0xae, 0xf1}, "umwait %ecx", 4},
		{[]byte{0xf3, 0x0f, 0xae, 0xf0}, "umonitor %rax", 4},
	} {
		in, err := decodeInst(tc.code, 0x1000, nil)
		if err != nil || in.Text != tc.text || in.Len != tc.n {
			t.Errorf("% x: got %q, %d bytes, %v; want %q, %d bytes", tc.code, in.Text, in.Len, err, tc.text, tc.n)
		}
	}
	// Forms it leaves to x86asm.
	for _, code := range [][]byte{{0x90}, {0x0f, 0x01, 0xf8}, {0x0f, 0xc7, 0x0e}, {0xf3, 0x0f, 0x1e, 0x01}} {
		if text, _, ok := decodeSystem(code); ok {
			t.Errorf("% x: decoded as %q", code, text)
		}
	}
}
