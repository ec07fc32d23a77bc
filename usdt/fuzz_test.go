package usdt

import (
	"debug/elf"
	"encoding/binary"
	"testing"
)

// FuzzParseArgs decodes any operand string without panicking, and what
// it accepts is well formed: sizes the loads have, registers pt_regs
// saves, an index exactly when there is a scale.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{
		"-4@%eax 8@$5 -8@-8(%rbp) 4@%r12d",
		"-1@%dil 2@%r8w 1@%ah -4@$-7",
		"4@16(%rax,%rdx,4) 8@(%rbx,%rcx) 8@(%rsp)",
		"-8@counter(%rip) -4@8+counter(%rip) 4@counter-4(%rip)",
		"%rsi 8@0x10 8@$0xffffffffffffffff",
	} {
		f.Add(s)
	}
	syms := func() []elf.Symbol { return []elf.Symbol{{Name: "counter", Value: 0x4010, Section: 1}} }
	f.Fuzz(func(t *testing.T, spec string) {
		args, err := ParseArgs(spec, 0x1000, syms)
		if err != nil {
			return
		}
		for _, a := range args {
			switch a.Size {
			case 1, 2, 4, 8:
			default:
				t.Fatalf("%q: size %d", spec, a.Size)
			}
			if a.Kind == Reg && (a.Reg == "" || a.RegSize == 0) {
				t.Fatalf("%q: register operand %+v", spec, a)
			}
			if (a.Index != "") != (a.Scale != 0) {
				t.Fatalf("%q: index %q with scale %d", spec, a.Index, a.Scale)
			}
			for _, r := range []string{a.Reg, a.Index} {
				if r != "" && !savedRegister(r) {
					t.Fatalf("%q: register %q is not one pt_regs saves", spec, r)
				}
			}
		}
	})
}

func savedRegister(name string) bool {
	for _, r := range registers {
		if r.name == name {
			return true
		}
	}
	return false
}

// FuzzParseNote reads any note description without panicking.
func FuzzParseNote(f *testing.F) {
	desc := make([]byte, 24)
	binary.LittleEndian.PutUint64(desc, 0x1130)
	f.Add(append(desc, "test\x00plain\x00-4@%edi\x00"...))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, desc []byte) {
		parseNote(desc, binary.LittleEndian)
	})
}
