package elfsym_test

import (
	"fmt"

	"kinst.dev/kinst/elfsym"
)

// A ustack line names the function and the decimal offset into it; an
// address no function covers prints in hex.
func ExampleFrame_SymOff() {
	known := elfsym.Frame{Addr: 0x5609b586417d, Symbol: "mid", Offset: 12, Path: "/tmp/prog"}
	unknown := elfsym.Frame{Addr: 0x7fde8f0234f7}
	fmt.Println(known.SymOff(), known.Sym())
	fmt.Println(unknown.SymOff(), unknown.Sym())
	// Output:
	// mid+12 mid
	// 0x7fde8f0234f7 0x7fde8f0234f7
}
