package kernel

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// KSym is one kernel symbol from /proc/kallsyms.
type KSym struct {
	Addr   uint64
	Name   string
	Type   byte   // nm-style type letter: 't'/'T' text, 'w'/'W' weak, 'd'/'D' data, ...
	Module string // "" for vmlinux, else the module in brackets, e.g. "kvm" or "bpf"
}

// IsFunc reports whether the symbol is code: kallsyms types t, T and the
// weak w, W, which the kernel uses for weak functions.
func (s KSym) IsFunc() bool {
	switch s.Type {
	case 't', 'T', 'w', 'W':
		return true
	}
	return false
}

// Kallsyms is a parsed kernel symbol table, sorted by address. It is safe
// for concurrent use.
type Kallsyms struct {
	syms []KSym

	nameOnce sync.Once
	byName   map[string][]int32 // indexes into syms, in address order
}

// ErrRestricted is returned when /proc/kallsyms shows every address as zero,
// which the kernel does for readers without CAP_SYSLOG or when
// kernel.kptr_restrict is 2.
var ErrRestricted = errors.New("kernel addresses are hidden (kernel.kptr_restrict, or not root)")

var kallsymsCache struct {
	once sync.Once
	ks   *Kallsyms
	err  error
}

// LoadKallsyms parses /proc/kallsyms the first time it is called and
// returns the same table afterwards.
func LoadKallsyms() (*Kallsyms, error) {
	kallsymsCache.once.Do(func() {
		text, err := readKallsyms()
		if err != nil {
			kallsymsCache.err = fmt.Errorf("read kallsyms: %w", err)
			return
		}
		kallsymsCache.ks, kallsymsCache.err = parseKallsyms(text)
	})
	return kallsymsCache.ks, kallsymsCache.err
}

// readKallsyms reads /proc/kallsyms into one string. The kernel formats
// the file as it is read, which is most of the cost (about 40 ms for 120,000
// symbols); a buffer sized for a typical table saves the repeated growing
// os.ReadFile does on a file whose size stat cannot tell.
func readKallsyms() (string, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return "", err
	}
	defer f.Close()
	var buf bytes.Buffer
	buf.Grow(8 << 20)
	if _, err := buf.ReadFrom(f); err != nil {
		return "", err
	}
	data := buf.Bytes()
	if len(data) == 0 {
		return "", nil
	}
	// The buffer is never written again, so the string may share it.
	return unsafe.String(&data[0], len(data)), nil
}

// ParseKallsyms parses text in the /proc/kallsyms format:
// "ffffffff81000000 T _text" with an optional "\t[module]".
func ParseKallsyms(data []byte) (*Kallsyms, error) {
	return parseKallsyms(string(data))
}

// parseKallsyms parses the table. Every name is a substring of text
// rather than an allocation of its own.
func parseKallsyms(text string) (*Kallsyms, error) {
	ks := &Kallsyms{syms: make([]KSym, 0, len(text)/40)}
	modules := map[string]string{}
	allZero := true
	lineno := 0
	for len(text) > 0 {
		lineno++
		var line string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, ""
		}
		if line == "" {
			continue
		}
		sym, err := parseKallsymsLine(line, modules)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d: %w", lineno, err)
		}
		if sym.Addr != 0 {
			allZero = false
		}
		ks.syms = append(ks.syms, sym)
	}
	if len(ks.syms) > 0 && allZero {
		return nil, ErrRestricted
	}
	// Module symbols follow vmlinux out of address order. The sort is
	// stable so that among aliases at one address the last listed wins,
	// as in bpftrace (_text, not _stext, at the kernel's start).
	byAddr := func(a, b KSym) int {
		switch {
		case a.Addr < b.Addr:
			return -1
		case a.Addr > b.Addr:
			return 1
		}
		return 0
	}
	if !slices.IsSortedFunc(ks.syms, byAddr) {
		slices.SortStableFunc(ks.syms, byAddr)
	}
	return ks, nil
}

func parseKallsymsLine(line string, modules map[string]string) (KSym, error) {
	var s KSym
	i := 0
	for ; i < len(line) && line[i] != ' '; i++ {
		c := line[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return s, fmt.Errorf("bad address in %q", line)
		}
		if i >= 16 {
			return s, fmt.Errorf("address too long in %q", line)
		}
		s.Addr = s.Addr<<4 | uint64(d)
	}
	if i == 0 || i+3 > len(line) || line[i+2] != ' ' {
		return s, fmt.Errorf("malformed line %q", line)
	}
	s.Type = line[i+1]
	rest := line[i+3:]
	name, mod, hasMod := strings.Cut(rest, "\t")
	if name == "" {
		return s, fmt.Errorf("no symbol name in %q", line)
	}
	s.Name = name
	if hasMod {
		mod = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(mod), "["), "]")
		if m, ok := modules[mod]; ok {
			mod = m
		} else {
			mod = strings.Clone(mod)
			modules[mod] = mod
		}
		s.Module = mod
	}
	return s, nil
}

// Len returns the number of symbols.
func (ks *Kallsyms) Len() int { return len(ks.syms) }

// Symbols returns the symbols in address order. The slice is shared: do
// not modify it.
func (ks *Kallsyms) Symbols() []KSym { return ks.syms }

// Lookup returns the symbol whose code contains addr — the one with the
// highest address not above addr — and addr's offset into it.
func (ks *Kallsyms) Lookup(addr uint64) (sym KSym, off uint64, ok bool) {
	i := sort.Search(len(ks.syms), func(i int) bool { return ks.syms[i].Addr > addr }) - 1
	if i < 0 {
		return KSym{}, 0, false
	}
	return ks.syms[i], addr - ks.syms[i].Addr, true
}

// Sym formats addr as bpftrace's ksym() does: the symbol name alone, or the
// address in hex ("0x1234") when no symbol covers it.
func (ks *Kallsyms) Sym(addr uint64) string {
	if s, _, ok := ks.Lookup(addr); ok {
		return s.Name
	}
	return fmt.Sprintf("0x%x", addr)
}

// SymOff formats addr as a bpftrace kstack frame: "name+off" with the
// offset in decimal ("do_syscall_64+506"), or the address in hex.
func (ks *Kallsyms) SymOff(addr uint64) string {
	if s, off, ok := ks.Lookup(addr); ok {
		return s.Name + "+" + uitoa(off)
	}
	return fmt.Sprintf("0x%x", addr)
}

func uitoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

func (ks *Kallsyms) indexNames() {
	ks.nameOnce.Do(func() {
		ks.byName = make(map[string][]int32, len(ks.syms))
		for i, s := range ks.syms {
			ks.byName[s.Name] = append(ks.byName[s.Name], int32(i))
		}
	})
}

// Address returns the address of the named symbol. When several symbols
// share the name (static functions in different files), it returns the
// lowest address; [Kallsyms.ByName] returns them all.
func (ks *Kallsyms) Address(name string) (uint64, bool) {
	ks.indexNames()
	idx := ks.byName[name]
	if len(idx) == 0 {
		return 0, false
	}
	return ks.syms[idx[0]].Addr, true
}

// ByName returns every symbol with the given name, in address order.
func (ks *Kallsyms) ByName(name string) []KSym {
	ks.indexNames()
	idx := ks.byName[name]
	out := make([]KSym, len(idx))
	for i, j := range idx {
		out[i] = ks.syms[j]
	}
	return out
}

// Functions returns the distinct names of function symbols (see
// [KSym.IsFunc]) that match the glob pattern (see [Match]), sorted.
func (ks *Kallsyms) Functions(pattern string) []string {
	var out []string
	for _, s := range ks.syms {
		if s.IsFunc() && Match(pattern, s.Name) {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
