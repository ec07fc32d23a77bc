package bpfelf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// ErrUnsupported reports a program or map the ELF format cannot carry.
var ErrUnsupported = errors.New("not expressible in a BPF ELF object")

// DataSection is the section a map the programs read by address is
// written as, unless its key already names a data section.
func DataSection(key string) string {
	if isDataSection(key) {
		return key
	}
	return ".data." + key
}

func isDataSection(name string) bool {
	return name == ".bss" || strings.HasPrefix(name, ".data") || strings.HasPrefix(name, ".rodata")
}

// kind is a program's type and attach type, which its section name says.
type kind struct {
	typ    ebpf.ProgramType
	attach ebpf.AttachType
}

// prefixes lists, for each kind of program, the section names that give
// it, the first being the one defaultSection picks.
var prefixes = map[kind][]string{
	{ebpf.Kprobe, ebpf.AttachNone}:               {"kprobe", "kretprobe", "uprobe", "uretprobe"},
	{ebpf.Kprobe, ebpf.AttachTraceKprobeMulti}:   {"kprobe.multi", "kretprobe.multi"},
	{ebpf.Kprobe, ebpf.AttachTraceKprobeSession}: {"kprobe.session"},
	{ebpf.Kprobe, ebpf.AttachTraceUprobeMulti}:   {"uprobe.multi", "uretprobe.multi"},
	{ebpf.TracePoint, ebpf.AttachNone}:           {"tracepoint", "tp"},
	{ebpf.RawTracepoint, ebpf.AttachNone}:        {"raw_tracepoint", "raw_tp"},
	{ebpf.PerfEvent, ebpf.AttachNone}:            {"perf_event"},
	{ebpf.Tracing, ebpf.AttachTraceFEntry}:       {"fentry"},
	{ebpf.Tracing, ebpf.AttachTraceFExit}:        {"fexit"},
	{ebpf.Tracing, ebpf.AttachModifyReturn}:      {"fmod_ret"},
	{ebpf.Tracing, ebpf.AttachTraceIter}:         {"iter"},
	{ebpf.XDP, ebpf.AttachXDP}:                   {"xdp"},
}

// defaultSection returns the section name a program is written in when
// its SectionName is empty: the first name libbpf gives its kind of
// program, followed for programs bound to a kernel object when loaded
// (fentry, iter, …) by that object, which is how the section carries
// AttachTo.
func defaultSection(p *ebpf.ProgramSpec) (string, error) {
	names, ok := prefixes[kind{p.Type, p.AttachType}]
	if !ok {
		return "", fmt.Errorf("%s program with attach type %s: %w", p.Type, p.AttachType, ErrUnsupported)
	}
	if p.Type == ebpf.Tracing {
		if p.AttachTo == "" {
			return "", fmt.Errorf("%s program without the function it attaches to: %w", p.AttachType, ErrUnsupported)
		}
		return names[0] + "/" + p.AttachTo, nil
	}
	return names[0], nil
}

// checkSection reports whether name gives p's kind of program, and for
// a program bound when loaded, the object it is bound to.
func checkSection(p *ebpf.ProgramSpec, name string) error {
	want, err := defaultSection(p)
	if err != nil {
		return err
	}
	prefix, extra, _ := strings.Cut(name, "/")
	wantPrefix, wantExtra, _ := strings.Cut(want, "/")
	if p.Type == ebpf.Tracing && extra != wantExtra {
		return fmt.Errorf("section %q does not name %q, the function the program attaches to", name, p.AttachTo)
	}
	if !slices.Contains(prefixes[kind{p.Type, p.AttachType}], prefix) {
		return fmt.Errorf("section %q does not make a %s program (use %s)", name, p.Type, wantPrefix)
	}
	return nil
}

// Write writes spec to w as a relocatable BPF ELF object.
func Write(w io.Writer, spec *ebpf.CollectionSpec) error {
	bo := spec.ByteOrder
	if bo == nil {
		bo = nativeOrder()
	}
	o := &object{bo: bo, mapSym: map[string]uint32{}}
	if err := o.programs(spec.Programs); err != nil {
		return err
	}
	if err := o.maps(spec.Maps); err != nil {
		return err
	}
	return o.write(w)
}

// A reloc is a program's reference to a map.
type reloc struct {
	off     uint64 // of the instruction, in bytes
	name    string // the map's key
	byValue bool   // a direct value load, not the map's address
}

type program struct {
	key     string
	section string
	code    []byte
	relocs  []reloc
}

// object gathers the parts of the ELF file before they are laid out.
type object struct {
	bo       binary.ByteOrder
	progs    []*program
	license  string
	version  uint32
	btfMaps  []string // keys of maps in .maps, sorted
	dataMaps []string // keys of maps written as data sections, sorted
	specs    map[string]*ebpf.MapSpec
	mapSym   map[string]uint32 // symbol index by map key
}

func (o *object) programs(specs map[string]*ebpf.ProgramSpec) error {
	first := true
	for _, key := range slices.Sorted(maps.Keys(specs)) {
		p := specs[key]
		if first {
			o.license, o.version = p.License, p.KernelVersion
			first = false
		} else if p.License != o.license || p.KernelVersion != o.version {
			return fmt.Errorf("program %s: license or kernel version differs from the other programs': an object has one: %w", key, ErrUnsupported)
		}
		if p.Flags != 0 || p.AttachTarget != nil {
			return fmt.Errorf("program %s: load flags or a target program: %w", key, ErrUnsupported)
		}
		section := p.SectionName
		if section == "" {
			s, err := defaultSection(p)
			if err != nil {
				return fmt.Errorf("program %s: %w", key, err)
			}
			section = s
		} else if err := checkSection(p, section); err != nil {
			return fmt.Errorf("program %s: %w", key, err)
		}
		code, relocs, err := encode(p.Instructions, o.bo)
		if err != nil {
			return fmt.Errorf("program %s: %w", key, err)
		}
		o.progs = append(o.progs, &program{key: key, section: section, code: code, relocs: relocs})
	}
	return nil
}

// encode marshals a program's instructions as the object holds them: a
// map load carries no descriptor and a direct value load its offset in
// the first half of its immediate, the relocation naming the map.
func encode(insns asm.Instructions, bo binary.ByteOrder) ([]byte, []reloc, error) {
	insns = slices.Clone(insns)
	var relocs []reloc
	iter := insns.Iterate()
	for iter.Next() {
		ins := iter.Ins
		switch {
		case ins.IsLoadFromMap():
			if ins.Reference() == "" {
				return nil, nil, fmt.Errorf("instruction %d loads a map by descriptor, not by name: %w", iter.Index, ErrUnsupported)
			}
			r := reloc{off: iter.Offset.Bytes(), name: ins.Reference(), byValue: ins.Src == asm.PseudoMapValue}
			// The offset of a value load moves to the first half.
			ins.Constant = int64(uint64(ins.Constant) >> 32)
			if !r.byValue {
				ins.Constant = 0
			}
			ins.Src = asm.R0
			relocs = append(relocs, r)
		case ins.IsKfuncCall(), ins.IsFunctionCall(), ins.OpCode.IsDWordLoad() && ins.Src != asm.R0:
			return nil, nil, fmt.Errorf("instruction %d (%v): %w", iter.Index, *ins, ErrUnsupported)
		}
	}
	var buf bytes.Buffer
	if err := insns.Marshal(&buf, bo); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), relocs, nil
}

// maps sorts the maps into .maps entries and data sections, by how the
// programs refer to them.
func (o *object) maps(specs map[string]*ebpf.MapSpec) error {
	o.specs = specs
	byValue := map[string]bool{}
	byAddr := map[string]bool{}
	for _, p := range o.progs {
		for _, r := range p.relocs {
			if specs[r.name] == nil {
				return fmt.Errorf("program %s refers to map %s, which the collection lacks", p.key, r.name)
			}
			if r.byValue {
				byValue[r.name] = true
			} else {
				byAddr[r.name] = true
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(specs)) {
		m := specs[key]
		if !byValue[key] && len(m.Contents) > 0 || m.InnerMap != nil || m.Pinning != ebpf.PinNone || m.MapExtra != 0 {
			return fmt.Errorf("map %s: initial contents, an inner map, pinning or extra: %w", key, ErrUnsupported)
		}
		if !byValue[key] {
			o.btfMaps = append(o.btfMaps, key)
			continue
		}
		if byAddr[key] || m.Type != ebpf.Array || m.KeySize != 4 || m.MaxEntries != 1 || m.Flags&^unixMmapable != 0 {
			return fmt.Errorf("map %s: the programs read it by address, which an object says only of a data section, and only a single-entry array read no other way can be one: %w", key, ErrUnsupported)
		}
		if _, err := sectionData(m); err != nil {
			return fmt.Errorf("map %s: %w", key, err)
		}
		o.dataMaps = append(o.dataMaps, key)
	}
	return nil
}

// sectionData is what a data section holds: the bytes of its map's one
// value, zero unless the spec gives them.
func sectionData(m *ebpf.MapSpec) ([]byte, error) {
	if len(m.Contents) == 0 {
		return make([]byte, m.ValueSize), nil
	}
	v, ok := m.Contents[0].Value.([]byte)
	if len(m.Contents) != 1 || !ok || len(v) != int(m.ValueSize) {
		return nil, fmt.Errorf("a data section's contents are the %d bytes of its one value: %w", m.ValueSize, ErrUnsupported)
	}
	return v, nil
}

// unixMmapable is BPF_F_MMAPABLE, which loaders set on data sections
// themselves.
const unixMmapable = 1 << 10

// rBPF6464 is the relocation of a 64-bit immediate load.
const rBPF6464 = 1

// A mapField is a member of a BTF-defined map: a pointer to an array
// whose length is the value.
type mapField struct {
	name  string
	value uint32
}

// mapFields lists a BTF-defined map's members, in order; sizes and
// flags that are zero are left out, as libbpf's loaders expect of ring
// buffers.
func mapFields(m *ebpf.MapSpec) []mapField {
	fields := []mapField{{"type", uint32(m.Type)}}
	if m.KeySize != 0 {
		fields = append(fields, mapField{"key_size", m.KeySize})
	}
	if m.ValueSize != 0 {
		fields = append(fields, mapField{"value_size", m.ValueSize})
	}
	fields = append(fields, mapField{"max_entries", m.MaxEntries})
	if m.Flags != 0 {
		fields = append(fields, mapField{"map_flags", m.Flags})
	}
	return fields
}

// mapBTF describes the .maps section: a variable per map, whose type is
// a struct of pointers to arrays whose lengths are the map's attributes,
// as libbpf's __uint() declares them.
func (o *object) mapBTF() ([]byte, []uint32, error) {
	intType := &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	sec := &btf.Datasec{Name: ".maps"}
	var sizes []uint32
	for _, key := range o.btfMaps {
		st := &btf.Struct{}
		for i, f := range mapFields(o.specs[key]) {
			st.Members = append(st.Members, btf.Member{
				Name:   f.name,
				Type:   &btf.Pointer{Target: &btf.Array{Index: intType, Type: intType, Nelems: f.value}},
				Offset: btf.Bits(64 * i),
			})
		}
		st.Size = uint32(8 * len(st.Members))
		sec.Vars = append(sec.Vars, btf.VarSecinfo{
			Type:   &btf.Var{Name: key, Type: st, Linkage: btf.GlobalVar},
			Offset: sec.Size,
			Size:   st.Size,
		})
		sizes = append(sizes, st.Size)
		sec.Size += st.Size
	}
	b, err := btf.NewBuilder(nil, nil)
	if err != nil {
		return nil, nil, err
	}
	if _, err := b.Add(sec); err != nil {
		return nil, nil, fmt.Errorf("map BTF: %w", err)
	}
	raw, err := b.Marshal(nil, &btf.MarshalOptions{Order: o.bo})
	if err != nil {
		return nil, nil, fmt.Errorf("map BTF: %w", err)
	}
	return raw, sizes, nil
}

// A section is one section header and its contents.
type section struct {
	name    string
	typ     elf.SectionType
	flags   elf.SectionFlag
	data    []byte
	link    uint32
	info    uint32
	align   uint64
	entsize uint64
}

// strtab builds a string table.
type strtab struct{ buf []byte }

func (t *strtab) add(s string) uint32 {
	if t.buf == nil {
		t.buf = []byte{0}
	}
	if s == "" {
		return 0
	}
	off := uint32(len(t.buf))
	t.buf = append(append(t.buf, s...), 0)
	return off
}

// write lays the object out: the ELF header, the sections' contents,
// then the section headers.
func (o *object) write(w io.Writer) error {
	// Section indexes, in the order the sections are written.
	var secs []*section
	add := func(s *section) uint32 {
		secs = append(secs, s)
		return uint32(len(secs))
	}
	progIdx := make([]uint32, len(o.progs))
	for i, p := range o.progs {
		progIdx[i] = add(&section{name: p.section, typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, data: p.code, align: 8})
	}
	var rels []*section
	for i, p := range o.progs {
		if len(p.relocs) > 0 {
			s := &section{name: ".rel" + p.section, typ: elf.SHT_REL, flags: elf.SHF_INFO_LINK, info: progIdx[i], align: 8, entsize: 16}
			add(s)
			rels = append(rels, s)
		}
	}
	if o.license != "" {
		add(&section{name: "license", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, data: append([]byte(o.license), 0), align: 1})
	}
	if o.version != 0 {
		v := make([]byte, 4)
		o.bo.PutUint32(v, o.version)
		add(&section{name: "version", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, data: v, align: 4})
	}
	var mapsIdx uint32
	var mapSizes []uint32
	if len(o.btfMaps) > 0 {
		raw, sizes, err := o.mapBTF()
		if err != nil {
			return err
		}
		mapSizes = sizes
		var total uint32
		for _, s := range sizes {
			total += s
		}
		mapsIdx = add(&section{name: ".maps", typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, data: make([]byte, total), align: 8})
		add(&section{name: ".BTF", typ: elf.SHT_PROGBITS, data: raw, align: 4})
	}
	dataIdx := make([]uint32, len(o.dataMaps))
	for i, key := range o.dataMaps {
		data, _ := sectionData(o.specs[key])
		dataIdx[i] = add(&section{name: DataSection(key), typ: elf.SHT_PROGBITS, flags: elf.SHF_ALLOC | elf.SHF_WRITE, data: data, align: 8})
	}
	symtab := &section{name: ".symtab", typ: elf.SHT_SYMTAB, align: 8, entsize: 24}
	symIdx := add(symtab)
	strs := &section{name: ".strtab", typ: elf.SHT_STRTAB, align: 1}
	symtab.link = add(strs)
	shstr := &section{name: ".shstrtab", typ: elf.SHT_STRTAB, align: 1}
	shstrIdx := add(shstr)

	// Symbols: the null one, the data sections' section symbols (local,
	// so first), then the programs and the .maps entries.
	var names strtab
	names.add("")
	syms := []elf.Sym64{{}}
	for i, key := range o.dataMaps {
		o.mapSym[key] = uint32(len(syms))
		syms = append(syms, elf.Sym64{Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_SECTION), Shndx: uint16(dataIdx[i])})
	}
	symtab.info = uint32(len(syms))
	for i, p := range o.progs {
		syms = append(syms, elf.Sym64{Name: names.add(p.key), Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC), Shndx: uint16(progIdx[i]), Size: uint64(len(p.code))})
	}
	var off uint64
	for i, key := range o.btfMaps {
		o.mapSym[key] = uint32(len(syms))
		syms = append(syms, elf.Sym64{Name: names.add(key), Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_OBJECT), Shndx: uint16(mapsIdx), Value: off, Size: uint64(mapSizes[i])})
		off += uint64(mapSizes[i])
	}
	var buf bytes.Buffer
	for _, s := range syms {
		binary.Write(&buf, o.bo, s)
	}
	symtab.data = buf.Bytes()
	strs.data = names.buf

	ri := 0
	for _, p := range o.progs {
		if len(p.relocs) == 0 {
			continue
		}
		var b bytes.Buffer
		for _, r := range p.relocs {
			binary.Write(&b, o.bo, elf.Rel64{Off: r.off, Info: elf.R_INFO(o.mapSym[r.name], rBPF6464)})
		}
		rels[ri].data = b.Bytes()
		rels[ri].link = symIdx
		ri++
	}

	var shnames strtab
	shnames.add("")
	nameOff := make([]uint32, len(secs))
	for i, s := range secs {
		nameOff[i] = shnames.add(s.name)
	}
	shstr.data = shnames.buf

	// Contents follow the 64-byte header, each aligned; the headers
	// follow them.
	const ehsize = 64
	var body bytes.Buffer
	offsets := make([]uint64, len(secs))
	for i, s := range secs {
		pad := alignUp(uint64(ehsize+body.Len()), s.align) - uint64(ehsize+body.Len())
		body.Write(make([]byte, pad))
		offsets[i] = uint64(ehsize + body.Len())
		body.Write(s.data)
	}
	shoff := alignUp(uint64(ehsize+body.Len()), 8)
	body.Write(make([]byte, shoff-uint64(ehsize+body.Len())))

	hdr := elf.Header64{
		Type:      uint16(elf.ET_REL),
		Machine:   uint16(elf.EM_BPF),
		Version:   uint32(elf.EV_CURRENT),
		Shoff:     shoff,
		Ehsize:    ehsize,
		Shentsize: 64,
		Shnum:     uint16(len(secs) + 1),
		Shstrndx:  uint16(shstrIdx),
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	if o.bo.Uint16([]byte{0, 1}) == 1 {
		hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2MSB)
	}
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)

	var out bytes.Buffer
	binary.Write(&out, o.bo, hdr)
	out.Write(body.Bytes())
	binary.Write(&out, o.bo, elf.Section64{})
	for i, s := range secs {
		binary.Write(&out, o.bo, elf.Section64{
			Name:      nameOff[i],
			Type:      uint32(s.typ),
			Flags:     uint64(s.flags),
			Off:       offsets[i],
			Size:      uint64(len(s.data)),
			Link:      s.link,
			Info:      s.info,
			Addralign: s.align,
			Entsize:   s.entsize,
		})
	}
	_, err := w.Write(out.Bytes())
	return err
}

// nativeOrder is the host's byte order as one of the two values
// cilium/ebpf's encoders accept.
func nativeOrder() binary.ByteOrder {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

func alignUp(n, a uint64) uint64 {
	if a <= 1 {
		return n
	}
	return (n + a - 1) / a * a
}
