package usdt

import (
	"debug/elf"
	"fmt"
	"strconv"
	"strings"
)

// A Kind says where an argument lives when its probe fires.
type Kind uint8

const (
	Const Kind = iota // the constant Value
	Reg               // the register Reg, shifted right by Shift bits
	Mem               // memory at Reg + Index*Scale + Value
)

// MaxArgs is how many arguments <sys/sdt.h> lets a probe pass.
const MaxArgs = 12

// An Arg is one decoded argument operand.
type Arg struct {
	// Size is the argument's width in bytes (1, 2, 4 or 8) and Signed
	// its signedness, from the N@ prefix: -4@ is a signed int.
	Size   int
	Signed bool
	Kind   Kind
	// Value is a Const's value or a Mem's displacement. A displacement
	// from %rip naming a symbol holds the symbol's address relative to
	// the probe site, so that the running process's own %rip, which is
	// the site when the probe fires, locates it in PIE files and shared
	// libraries as well.
	Value int64
	// Reg names a register the way struct pt_regs does (ax, r12, ip):
	// Reg's value, or a Mem's base, "" for none.
	Reg string
	// RegSize is how many bytes of Reg the operand names (4 for %eax),
	// Shift 8 for the second byte (%ah).
	RegSize int
	Shift   int
	// Index and Scale are a Mem's index register and its factor.
	Index string
	Scale int
}

// String writes the argument back in the note's notation.
func (a Arg) String() string {
	size := strconv.Itoa(a.Size)
	if a.Signed {
		size = "-" + size
	}
	switch a.Kind {
	case Const:
		return fmt.Sprintf("%s@$%d", size, a.Value)
	case Reg:
		return fmt.Sprintf("%s@%%%s/%d", size, a.Reg, a.RegSize*8)
	}
	s := fmt.Sprintf("%s@%d(%%%s", size, a.Value, a.Reg)
	if a.Index != "" {
		s += fmt.Sprintf(",%%%s,%d", a.Index, a.Scale)
	}
	return s + ")"
}

// A register operand: its pt_regs name, width in bytes and bit shift.
type register struct {
	name  string
	size  int
	shift int
}

// registers maps every x86-64 general register name, with its 32-, 16-
// and 8-bit parts, to the full register pt_regs saves.
var registers = func() map[string]register {
	m := map[string]register{"rip": {"ip", 8, 0}}
	for _, r := range []struct{ name, r64, r32, r16, r8, r8h string }{
		{"ax", "rax", "eax", "ax", "al", "ah"},
		{"bx", "rbx", "ebx", "bx", "bl", "bh"},
		{"cx", "rcx", "ecx", "cx", "cl", "ch"},
		{"dx", "rdx", "edx", "dx", "dl", "dh"},
		{"si", "rsi", "esi", "si", "sil", ""},
		{"di", "rdi", "edi", "di", "dil", ""},
		{"bp", "rbp", "ebp", "bp", "bpl", ""},
		{"sp", "rsp", "esp", "sp", "spl", ""},
	} {
		m[r.r64] = register{r.name, 8, 0}
		m[r.r32] = register{r.name, 4, 0}
		m[r.r16] = register{r.name, 2, 0}
		m[r.r8] = register{r.name, 1, 0}
		if r.r8h != "" {
			m[r.r8h] = register{r.name, 1, 8}
		}
	}
	for i := 8; i <= 15; i++ {
		n := "r" + strconv.Itoa(i)
		m[n] = register{n, 8, 0}
		m[n+"d"] = register{n, 4, 0}
		m[n+"w"] = register{n, 2, 0}
		m[n+"b"] = register{n, 1, 0}
		m[n+"l"] = register{n, 1, 0}
	}
	return m
}()

// ParseArgs decodes a note's argument operands, separated by spaces. The
// probe's address and the file's symbols (asked for only when an operand
// names one) resolve displacements that name symbols.
func ParseArgs(spec string, probeAddr uint64, symbols func() []elf.Symbol) ([]Arg, error) {
	fields := strings.Fields(spec)
	if len(fields) > MaxArgs {
		return nil, fmt.Errorf("%d arguments, more than the %d <sys/sdt.h> allows", len(fields), MaxArgs)
	}
	args := make([]Arg, len(fields))
	for i, f := range fields {
		a, err := parseArg(f, probeAddr, symbols)
		if err != nil {
			return nil, fmt.Errorf("argument %d %q: %w", i, f, err)
		}
		args[i] = a
	}
	return args, nil
}

func parseArg(s string, probeAddr uint64, symbols func() []elf.Symbol) (Arg, error) {
	a := Arg{Size: 8}
	if size, op, ok := strings.Cut(s, "@"); ok {
		n, err := strconv.Atoi(size)
		if err != nil {
			return a, fmt.Errorf("bad size %q", size)
		}
		a.Signed = n < 0
		a.Size = max(n, -n)
		if a.Size != 1 && a.Size != 2 && a.Size != 4 && a.Size != 8 {
			return a, fmt.Errorf("size %d is not 1, 2, 4 or 8 bytes", a.Size)
		}
		s = op
	}
	switch {
	case strings.HasPrefix(s, "$"):
		v, err := parseInt(s[1:])
		if err != nil {
			return a, fmt.Errorf("bad constant %q", s[1:])
		}
		a.Kind, a.Value = Const, v
		return a, nil
	case strings.HasPrefix(s, "%"):
		r, ok := registers[s[1:]]
		if !ok {
			return a, fmt.Errorf("unknown register %s", s)
		}
		a.Kind, a.Reg, a.RegSize, a.Shift = Reg, r.name, r.size, r.shift
		return a, nil
	}
	return parseMem(a, s, probeAddr, symbols)
}

// parseMem decodes DISP(BASE[,INDEX[,SCALE]]) where DISP is a sum of
// numbers and symbols, or an absolute DISP alone.
func parseMem(a Arg, s string, probeAddr uint64, symbols func() []elf.Symbol) (Arg, error) {
	a.Kind = Mem
	disp, regs, paren := strings.Cut(s, "(")
	if strings.Contains(disp, ":") {
		return a, fmt.Errorf("segment-relative operands are not supported")
	}
	if paren {
		inner, ok := strings.CutSuffix(regs, ")")
		if !ok {
			return a, fmt.Errorf("unbalanced parentheses")
		}
		parts := strings.Split(inner, ",")
		if len(parts) > 3 {
			return a, fmt.Errorf("too many registers")
		}
		reg := func(s string) (string, error) {
			r, ok := registers[strings.TrimPrefix(s, "%")]
			if !ok || !strings.HasPrefix(s, "%") || r.size != 8 {
				return "", fmt.Errorf("bad address register %q", s)
			}
			return r.name, nil
		}
		var err error
		if parts[0] != "" {
			if a.Reg, err = reg(parts[0]); err != nil {
				return a, err
			}
		}
		if len(parts) > 1 {
			if a.Index, err = reg(parts[1]); err != nil {
				return a, err
			}
			a.Scale = 1
			if len(parts) == 3 {
				sc, err := strconv.Atoi(parts[2])
				if err != nil || sc != 1 && sc != 2 && sc != 4 && sc != 8 {
					return a, fmt.Errorf("bad scale %q", parts[2])
				}
				a.Scale = sc
			}
		}
	}
	v, sym, err := parseDisp(disp, symbols)
	if err != nil {
		return a, err
	}
	a.Value = v
	if sym {
		if a.Reg != "ip" || a.Index != "" {
			return a, fmt.Errorf("a symbol is supported only relative to %%rip")
		}
		a.Value -= int64(probeAddr)
	}
	return a, nil
}

// parseDisp sums a displacement's terms, such as "-24", "counter" or
// "8+counter", and says whether one was a symbol.
func parseDisp(s string, symbols func() []elf.Symbol) (int64, bool, error) {
	if s == "" {
		return 0, false, nil
	}
	var sum int64
	var sym bool
	for s != "" {
		neg := false
		switch s[0] {
		case '-':
			neg, s = true, s[1:]
		case '+':
			s = s[1:]
		}
		end := strings.IndexAny(s, "+-")
		if end < 0 {
			end = len(s)
		}
		term := s[:end]
		s = s[end:]
		v, err := parseInt(term)
		if err != nil {
			addr, ok := lookup(symbols(), term)
			if !ok {
				return 0, false, fmt.Errorf("no symbol %q in the file", term)
			}
			v, sym = int64(addr), true
		}
		if neg {
			v = -v
		}
		sum += v
	}
	return sum, sym, nil
}

func parseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		// A 64-bit constant above the signed range, as $0xffffffffffffffff.
		u, uerr := strconv.ParseUint(s, 0, 64)
		if uerr != nil {
			return 0, err
		}
		v = int64(u)
	}
	return v, nil
}

func lookup(syms []elf.Symbol, name string) (uint64, bool) {
	for _, s := range syms {
		if s.Name == name && s.Section != elf.SHN_UNDEF {
			return s.Value, true
		}
	}
	return 0, false
}
