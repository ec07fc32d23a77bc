package kernel

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cilium/ebpf/btf"
)

var (
	// ErrNoBTF is returned when the kernel offers no BTF type information.
	ErrNoBTF = errors.New("kernel BTF is not available")
	// ErrNoType is returned when BTF has no type or function of a name.
	ErrNoType = errors.New("no such type in kernel BTF")
)

// btfCache holds the decoded kernel and module BTF for the whole process.
var btfCache = btf.NewCache()

var kernelBTF struct {
	once sync.Once
	spec *btf.Spec
	err  error
	file bool // UseBTFFile gave the types
}

// KernelBTF returns the kernel's (vmlinux) BTF, loading it on first use.
// The error wraps [ErrNoBTF] when the kernel has none.
func KernelBTF() (*btf.Spec, error) {
	kernelBTF.once.Do(func() {
		kernelBTF.spec, kernelBTF.err = btfCache.Kernel()
		if kernelBTF.err != nil {
			kernelBTF.err = fmt.Errorf("%w: %w", ErrNoBTF, kernelBTF.err)
		}
	})
	return kernelBTF.spec, kernelBTF.err
}

// ErrBTFInUse is returned by UseBTFFile once kernel BTF has been loaded.
var ErrBTFInUse = errors.New("kernel BTF is already loaded")

// UseBTFFile makes KernelBTF return the types of a BTF (or ELF) file in
// place of the running kernel's, as BPFTRACE_BTF asks of bpftrace. It must
// come before anything reads kernel BTF.
func UseBTFFile(path string) error {
	spec, err := btf.LoadSpec(path)
	if err != nil {
		return fmt.Errorf("load BTF from %s: %w", path, err)
	}
	used := false
	kernelBTF.once.Do(func() {
		kernelBTF.spec, kernelBTF.file, used = spec, true, true
	})
	if !used {
		return fmt.Errorf("load BTF from %s: %w", path, ErrBTFInUse)
	}
	return nil
}

// Function is a kernel function's prototype from BTF.
type Function struct {
	Name     string
	Module   string // "" for vmlinux
	Params   []Param
	Variadic bool     // the prototype ends in "..."
	Return   btf.Type // *btf.Void for void functions
	Func     *btf.Func
}

// Param is one named parameter of a [Function].
type Param struct {
	Name string
	Type btf.Type
}

// String returns the parameter as `bpftrace -lv` lists it for a kfunc,
// e.g. "struct file * file".
func (p Param) String() string { return TypeString(p.Type) + " " + p.Name }

// FuncProto returns the prototype of kernel function name from vmlinux BTF,
// or from the BTF of the module kallsyms places it in. The error wraps
// [ErrNoType] when BTF does not describe the function and [ErrNoBTF] when
// the kernel has no BTF at all.
func FuncProto(name string) (*Function, error) {
	spec, err := KernelBTF()
	if err != nil {
		return nil, err
	}
	module := ""
	fn, err := findFunc(spec, name)
	if errors.Is(err, btf.ErrNotFound) {
		if module = moduleOf(name); module != "" {
			var mspec *btf.Spec
			if mspec, err = btfCache.Module(module); err == nil {
				fn, err = findFunc(mspec, name)
			}
		}
	}
	if errors.Is(err, btf.ErrNotFound) {
		return nil, fmt.Errorf("function %s: %w", name, ErrNoType)
	}
	if err != nil {
		return nil, fmt.Errorf("function %s: %w", name, err)
	}
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok {
		return nil, fmt.Errorf("function %s: BTF type %v is not a prototype", name, fn.Type)
	}
	f := &Function{Name: name, Module: module, Return: orVoid(proto.Return), Func: fn}
	for i, p := range proto.Params {
		if i == len(proto.Params)-1 && p.Name == "" && isVoid(p.Type) {
			f.Variadic = true
			break
		}
		f.Params = append(f.Params, Param{Name: p.Name, Type: orVoid(p.Type)})
	}
	return f, nil
}

// RawTracepointProto describes the arguments a raw tracepoint passes,
// named as the kernel's __bpf_trace_NAME function names them (the
// typedef btf_trace_NAME gives the same types without names): its first
// parameter, the tracepoint's own data, is no argument of the event.
func RawTracepointProto(name string) (*Function, error) {
	fn, err := FuncProto("__bpf_trace_" + name)
	if err != nil {
		return nil, fmt.Errorf("raw tracepoint %s: %w", name, err)
	}
	if len(fn.Params) == 0 {
		return nil, fmt.Errorf("raw tracepoint %s: __bpf_trace_%s takes no data pointer", name, name)
	}
	return &Function{Name: name, Module: fn.Module, Params: fn.Params[1:], Return: &btf.Void{}, Func: fn.Func}, nil
}

func findFunc(spec *btf.Spec, name string) (*btf.Func, error) {
	var fn *btf.Func
	err := spec.TypeByName(name, &fn)
	if errors.Is(err, btf.ErrMultipleMatches) {
		// Static functions of one name in several files: their
		// prototypes are normally identical, so any one will do.
		types, err := spec.AnyTypesByName(name)
		if err != nil {
			return nil, err
		}
		for _, t := range types {
			if f, ok := t.(*btf.Func); ok {
				return f, nil
			}
		}
		return nil, btf.ErrNotFound
	}
	return fn, err
}

// moduleOf returns the module kallsyms places a function in, or "".
func moduleOf(name string) string {
	ks, err := LoadKallsyms()
	if err != nil {
		return ""
	}
	for _, s := range ks.ByName(name) {
		if s.IsFunc() && s.Module != "" {
			return s.Module
		}
	}
	return ""
}

func isVoid(t btf.Type) bool {
	_, ok := t.(*btf.Void)
	return t == nil || ok
}

func orVoid(t btf.Type) btf.Type {
	if t == nil {
		return &btf.Void{}
	}
	return t
}

// TypeByName looks up a type in vmlinux BTF and, when vmlinux has no
// definition of it (none at all, or a forward declaration), in the BTF of
// the loaded modules, as bpftrace does. name may carry a kind,
// "struct file", "union thread_union", "enum pid_type", or be bare, "pid_t",
// in which case a typedef is preferred over a struct, union, enum or base
// type of the same name. The error wraps [ErrNoType] when there is none.
func TypeByName(name string) (btf.Type, error) {
	spec, err := KernelBTF()
	if err != nil {
		return nil, err
	}
	return typeIn(spec, loadedModules, name)
}

// loadedModules returns the BTF of every module loaded when it is first
// called, split against vmlinux's. With UseBTFFile there are none: the
// file's types are all there are, as with bpftrace's BPFTRACE_BTF.
var loadedModules = sync.OnceValue(func() []*btf.Spec {
	if kernelBTF.file {
		return nil
	}
	return moduleSpecs(moduleBTFDir, btfCache.Module)
})

// moduleBTFDir holds the kernel's BTF: vmlinux and one file per loaded
// module that has BTF.
const moduleBTFDir = "/sys/kernel/btf"

// moduleSpecs loads the BTF of the modules in dir with load, skipping
// those that cannot be read (unloaded meanwhile, or malformed).
func moduleSpecs(dir string, load func(module string) (*btf.Spec, error)) []*btf.Spec {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var specs []*btf.Spec
	for _, e := range entries {
		if e.Name() == "vmlinux" {
			continue
		}
		if spec, err := load(e.Name()); err == nil {
			specs = append(specs, spec)
		}
	}
	return specs
}

// typeIn finds name in vmlinux and, when that has no definition of it,
// in the modules' BTF, which modules loads only then.
func typeIn(vmlinux *btf.Spec, modules func() []*btf.Spec, name string) (btf.Type, error) {
	name = strings.Join(strings.Fields(name), " ")
	best, bestRank, err := rankedType(vmlinux, name)
	if err != nil {
		return nil, err
	}
	if bestRank <= 1 { // nothing, or a forward declaration
		for _, spec := range modules() {
			t, rank, err := rankedType(spec, name)
			if err != nil {
				return nil, err
			}
			if rank > bestRank {
				best, bestRank = t, rank
			}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("type %s: %w", name, ErrNoType)
	}
	return best, nil
}

// rankedType returns spec's best answer for name and its rank.
func rankedType(spec *btf.Spec, name string) (btf.Type, int, error) {
	kind, bare, hasKind := strings.Cut(name, " ")
	if !hasKind || (kind != "struct" && kind != "union" && kind != "enum") {
		kind, bare = "", name
	}
	types, err := spec.AnyTypesByName(bare)
	if err != nil && !errors.Is(err, btf.ErrNotFound) {
		return nil, 0, fmt.Errorf("type %s: %w", name, err)
	}
	var best btf.Type
	bestRank := 0
	for _, t := range types {
		if r := typeRank(kind, t); r > bestRank {
			best, bestRank = t, r
		}
	}
	return best, bestRank, nil
}

// typeRank scores how well t answers a lookup for kind ("" for a bare
// name); 0 means not at all. Full definitions beat forward declarations.
func typeRank(kind string, t btf.Type) int {
	switch t := t.(type) {
	case *btf.Struct:
		return rankIf(kind == "struct" || kind == "", 4)
	case *btf.Union:
		return rankIf(kind == "union" || kind == "", 4)
	case *btf.Enum:
		return rankIf(kind == "enum" || kind == "", 3)
	case *btf.Fwd:
		want := map[btf.FwdKind]string{btf.FwdStruct: "struct", btf.FwdUnion: "union"}[t.Kind]
		return rankIf(kind == want || kind == "", 1)
	case *btf.Typedef:
		return rankIf(kind == "", 5)
	case *btf.Int, *btf.Float:
		return rankIf(kind == "", 2)
	}
	return 0
}

func rankIf(cond bool, rank int) int {
	if cond {
		return rank
	}
	return 0
}

// TypeString returns a type as C spells it in a cast, which is how
// bpftrace lists types: "struct file *", "const char *", "u64",
// "char[16]", "void (*)(struct sk_buff *)".
func TypeString(t btf.Type) string {
	return declare(t, "")
}

// declare returns the C declaration of inner (a name, or a declarator
// being built outwards from one) as having type t.
func declare(t btf.Type, inner string) string {
	switch t := t.(type) {
	case nil, *btf.Void:
		return join("void", inner)
	case *btf.Int:
		return join(t.Name, inner)
	case *btf.Float:
		return join(t.Name, inner)
	case *btf.Typedef:
		return join(t.Name, inner)
	case *btf.Struct:
		return join(tagged("struct", t.Name), inner)
	case *btf.Union:
		return join(tagged("union", t.Name), inner)
	case *btf.Enum:
		return join(tagged("enum", t.Name), inner)
	case *btf.Fwd:
		return join(tagged(t.Kind.String(), t.Name), inner)
	case *btf.Pointer:
		d := "*" + inner
		switch skipTags(t.Target).(type) {
		case *btf.Array, *btf.FuncProto:
			d = "(" + d + ")"
		}
		return declare(t.Target, d)
	case *btf.Array:
		return declare(t.Type, inner+"["+strconv.FormatUint(uint64(t.Nelems), 10)+"]")
	case *btf.FuncProto:
		return declare(t.Return, inner+"("+paramList(t)+")")
	case *btf.Const:
		return qualify("const", t.Type, inner)
	case *btf.Volatile:
		return qualify("volatile", t.Type, inner)
	case *btf.Restrict:
		return declare(t.Type, inner)
	case *btf.TypeTag:
		return declare(t.Type, inner)
	case *btf.Func:
		return declare(t.Type, join(t.Name, inner))
	case *btf.Var:
		return declare(t.Type, join(t.Name, inner))
	}
	return join(t.TypeName(), inner)
}

// qualify applies const or volatile: after the star when it qualifies a
// pointer ("char *const p"), before the base type otherwise ("const char *p").
func qualify(q string, t btf.Type, inner string) string {
	if _, ok := skipTags(t).(*btf.Pointer); ok {
		return declare(t, join(q, inner))
	}
	return q + " " + declare(t, inner)
}

func skipTags(t btf.Type) btf.Type {
	for {
		tt, ok := t.(*btf.TypeTag)
		if !ok {
			return t
		}
		t = tt.Type
	}
}

func tagged(kind, name string) string {
	if name == "" {
		return kind + " {...}"
	}
	return kind + " " + name
}

func join(base, inner string) string {
	switch {
	case inner == "":
		return base
	case inner[0] == '[':
		return base + inner
	}
	return base + " " + inner
}

func paramList(fp *btf.FuncProto) string {
	if len(fp.Params) == 0 {
		return "void"
	}
	parts := make([]string, len(fp.Params))
	for i, p := range fp.Params {
		if i == len(fp.Params)-1 && p.Name == "" && isVoid(p.Type) {
			parts[i] = "..."
			continue
		}
		parts[i] = declare(p.Type, p.Name)
	}
	return strings.Join(parts, ", ")
}

// iterPrefix starts the BTF name of every BPF iterator's target function.
const iterPrefix = "bpf_iter_"

// Iterators returns the names of the BPF iterators the kernel offers
// ("task", "task_file", …), sorted: the functions named bpf_iter_NAME
// whose first parameter is the iterator's struct bpf_iter_meta. Other
// functions with that prefix are the kfuncs of open-coded iterators.
func Iterators() ([]string, error) {
	spec, err := KernelBTF()
	if err != nil {
		return nil, err
	}
	var names []string
	for t, err := range spec.All() {
		if err != nil {
			return nil, err
		}
		if fn, ok := t.(*btf.Func); ok && strings.HasPrefix(fn.Name, iterPrefix) && isIterator(fn) {
			names = append(names, strings.TrimPrefix(fn.Name, iterPrefix))
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Iterator returns the prototype of iterator name's target function, or
// an error wrapping [ErrNoType] when the kernel has no such iterator.
func Iterator(name string) (*Function, error) {
	fn, err := FuncProto(iterPrefix + name)
	if err == nil && !isIterator(fn.Func) {
		err = fmt.Errorf("%s%s is not an iterator: %w", iterPrefix, name, ErrNoType)
	}
	return fn, err
}

func isIterator(fn *btf.Func) bool {
	proto, ok := fn.Type.(*btf.FuncProto)
	if !ok || len(proto.Params) == 0 {
		return false
	}
	// Targets return int; bpf_iter_get_info, which also takes the meta
	// data, returns a program.
	if _, isInt := skipTags(proto.Return).(*btf.Int); !isInt {
		return false
	}
	ptr, ok := skipTags(proto.Params[0].Type).(*btf.Pointer)
	if !ok {
		return false
	}
	meta, ok := skipTags(ptr.Target).(*btf.Struct)
	return ok && meta.Name == "bpf_iter_meta"
}

// NamedTypes returns the vmlinux structs, unions and enums whose C names
// ("struct path", "enum pid_type") match pattern, sorted and each once.
func NamedTypes(pattern string) ([]btf.Type, error) {
	spec, err := KernelBTF()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	byName := map[string]btf.Type{}
	for t, err := range spec.All() {
		if err != nil {
			return nil, err
		}
		var kind string
		switch t.(type) {
		case *btf.Struct:
			kind = "struct"
		case *btf.Union:
			kind = "union"
		case *btf.Enum:
			kind = "enum"
		default:
			continue
		}
		if t.TypeName() == "" {
			continue
		}
		name := kind + " " + t.TypeName()
		if seen[name] || !Match(pattern, name) {
			continue
		}
		seen[name] = true
		names = append(names, name)
		byName[name] = t
	}
	slices.Sort(names)
	types := make([]btf.Type, len(names))
	for i, n := range names {
		types[i] = byName[n]
	}
	return types, nil
}

// Definition returns the C definition of a struct, union, enum or typedef
// as `bpftrace -lv 'struct path'` prints it, without a trailing newline.
// Other types come back as their [TypeString].
func Definition(t btf.Type) string {
	var b strings.Builder
	switch t := t.(type) {
	case *btf.Struct:
		writeBody(&b, "struct", t.Name, t.Members, 0)
	case *btf.Union:
		writeBody(&b, "union", t.Name, t.Members, 0)
	case *btf.Enum:
		writeEnum(&b, t, 0)
	case *btf.Typedef:
		b.WriteString("typedef ")
		writeDecl(&b, t.Type, t.Name, 0)
	default:
		return TypeString(t)
	}
	b.WriteString(";")
	return b.String()
}

// writeDecl writes "type name" at the given nesting depth, spelling out
// anonymous structs, unions and enums in place.
func writeDecl(b *strings.Builder, t btf.Type, name string, depth int) {
	switch t := t.(type) {
	case *btf.Struct:
		if t.Name == "" {
			writeBody(b, "struct", "", t.Members, depth)
			b.WriteString(leadingSpace(name))
			return
		}
	case *btf.Union:
		if t.Name == "" {
			writeBody(b, "union", "", t.Members, depth)
			b.WriteString(leadingSpace(name))
			return
		}
	case *btf.Enum:
		if t.Name == "" {
			writeEnum(b, t, depth)
			b.WriteString(leadingSpace(name))
			return
		}
	}
	b.WriteString(declare(t, name))
}

func leadingSpace(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}

func writeBody(b *strings.Builder, kind, name string, members []btf.Member, depth int) {
	b.WriteString(kind)
	if name != "" {
		b.WriteString(" " + name)
	}
	b.WriteString(" {\n")
	for _, m := range members {
		b.WriteString(strings.Repeat("\t", depth+1))
		writeDecl(b, m.Type, m.Name, depth+1)
		if m.BitfieldSize > 0 {
			fmt.Fprintf(b, ": %d", m.BitfieldSize)
		}
		b.WriteString(";\n")
	}
	b.WriteString(strings.Repeat("\t", depth) + "}")
}

func writeEnum(b *strings.Builder, e *btf.Enum, depth int) {
	b.WriteString("enum")
	if e.Name != "" {
		b.WriteString(" " + e.Name)
	}
	b.WriteString(" {\n")
	for _, v := range e.Values {
		b.WriteString(strings.Repeat("\t", depth+1) + v.Name + " = ")
		if e.Signed {
			b.WriteString(strconv.FormatInt(int64(v.Value), 10))
		} else {
			b.WriteString(strconv.FormatUint(v.Value, 10))
		}
		b.WriteString(",\n")
	}
	b.WriteString(strings.Repeat("\t", depth) + "}")
}
