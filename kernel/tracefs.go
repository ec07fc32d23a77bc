package kernel

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrNoTracepoint is returned when a named tracepoint does not exist.
var ErrNoTracepoint = errors.New("tracepoint not found")

// The places tracefs is conventionally found, in the order tried. The
// second is the automount debugfs provides on kernels older than 4.1.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

var tracefs struct {
	mu  sync.Mutex
	dir string
}

// TracefsDir returns the directory where tracefs is mounted. When it is not
// mounted anywhere and the process is root, it mounts tracefs on
// /sys/kernel/tracing first. A successful answer is cached.
func TracefsDir() (string, error) {
	tracefs.mu.Lock()
	defer tracefs.mu.Unlock()
	if tracefs.dir != "" {
		return tracefs.dir, nil
	}
	dir, err := findTracefs()
	if err != nil {
		return "", err
	}
	tracefs.dir = dir
	return dir, nil
}

func findTracefs() (string, error) {
	for _, dir := range tracefsDirs {
		if isMounted(dir, unix.TRACEFS_MAGIC) {
			return dir, nil
		}
	}
	if dir := mountPointOf("tracefs"); dir != "" {
		return dir, nil
	}
	if err := mountIfAbsent("tracefs", tracefsDirs[0], unix.TRACEFS_MAGIC); err != nil {
		return "", fmt.Errorf("tracefs is not mounted: %w", err)
	}
	return tracefsDirs[0], nil
}

// mountPointOf returns the first mount point of a file system type listed in
// /proc/self/mounts, or "" when there is none.
func mountPointOf(fstype string) string {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) >= 3 && f[2] == fstype {
			return unescapeMount(f[1])
		}
	}
	return ""
}

// unescapeMount undoes the octal escapes (\040 for a space) the kernel uses
// for mount points in /proc/self/mounts.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// Tracepoint names one kernel tracepoint.
type Tracepoint struct {
	Category string // the directory under events/, e.g. "syscalls"
	Name     string // the event, e.g. "sys_enter_openat"
}

// String returns the tracepoint as "category:name".
func (t Tracepoint) String() string { return t.Category + ":" + t.Name }

// Tracepoints lists the tracepoints whose category and name match the glob
// patterns (see [Match]), sorted as their "category:name" strings. Like
// bpftrace it lists what tracefs's available_events offers, which leaves
// out the ftrace category's internal events: those cannot be attached.
// An empty result is not an error.
func Tracepoints(category, name string) ([]Tracepoint, error) {
	dir, err := TracefsDir()
	if err != nil {
		return nil, err
	}
	if !HasGlob(category) && !HasGlob(name) && category != "ftrace" {
		// One tracepoint: look for it rather than read all of them.
		if _, err := os.Stat(filepath.Join(dir, "events", category, name, "id")); err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return nil, fmt.Errorf("tracepoint %s:%s: %w: only root reads tracefs", category, name, unix.EACCES)
			}
			return nil, nil
		}
		return []Tracepoint{{category, name}}, nil
	}
	all, err := allTracepoints(dir)
	if err != nil {
		return nil, err
	}
	var out []Tracepoint
	for _, tp := range all {
		if Match(category, tp.Category) && Match(name, tp.Name) {
			out = append(out, tp)
		}
	}
	return out, nil
}

func allTracepoints(dir string) ([]Tracepoint, error) {
	data, err := os.ReadFile(filepath.Join(dir, "available_events"))
	if err != nil {
		return walkEvents(dir)
	}
	var out []Tracepoint
	for line := range strings.Lines(string(data)) {
		cat, name, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			out = append(out, Tracepoint{cat, name})
		}
	}
	sortTracepoints(out)
	return out, nil
}

// walkEvents lists events/CATEGORY/NAME directories that have an id file,
// for kernels whose available_events cannot be read.
func walkEvents(dir string) ([]Tracepoint, error) {
	events := filepath.Join(dir, "events")
	cats, err := os.ReadDir(events)
	if err != nil {
		return nil, fmt.Errorf("list tracepoints: %w", err)
	}
	var out []Tracepoint
	for _, cat := range cats {
		if !cat.IsDir() || cat.Name() == "ftrace" {
			continue
		}
		names, err := os.ReadDir(filepath.Join(events, cat.Name()))
		if err != nil {
			return nil, fmt.Errorf("list tracepoints: %w", err)
		}
		for _, n := range names {
			if !n.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(events, cat.Name(), n.Name(), "id")); err == nil {
				out = append(out, Tracepoint{cat.Name(), n.Name()})
			}
		}
	}
	sortTracepoints(out)
	return out, nil
}

func sortTracepoints(tps []Tracepoint) {
	slices.SortFunc(tps, compareTracepoints)
}

// compareTracepoints orders tracepoints as their "category:name"
// strings, without building them.
func compareTracepoints(a, b Tracepoint) int {
	for i := 0; ; i++ {
		cx, cy := joinedByte(a, i), joinedByte(b, i)
		if cx != cy || cx < 0 {
			return cx - cy
		}
	}
}

// joinedByte is byte i of "category:name", or -1 past its end.
func joinedByte(t Tracepoint, i int) int {
	switch {
	case i < len(t.Category):
		return int(t.Category[i])
	case i == len(t.Category):
		return ':'
	case i-len(t.Category)-1 < len(t.Name):
		return int(t.Name[i-len(t.Category)-1])
	}
	return -1
}

// AddrSpace tells which address space a pointer points into, which decides
// whether BPF code reads through it with probe_read_user or probe_read_kernel.
type AddrSpace int

const (
	KernelSpace AddrSpace = iota // read with bpf_probe_read_kernel
	UserSpace                    // read with bpf_probe_read_user
)

func (a AddrSpace) String() string {
	if a == UserSpace {
		return "user"
	}
	return "kernel"
}

// Format is the record layout of one tracepoint, from its format file.
type Format struct {
	Category string
	Name     string
	ID       uint32
	// Common holds the common_* header fields every record starts with.
	// bpftrace refuses access to them ("BPF does not support accessing
	// common tracepoint fields"), but their sizes place the others.
	Common []Field
	// Fields holds the tracepoint's own fields, what bpftrace's args
	// exposes and `bpftrace -lv` lists. Offsets are from the record start.
	Fields []Field
}

// Field looks up one of the tracepoint's own fields by name.
func (f *Format) Field(name string) (Field, bool) {
	for _, fl := range f.Fields {
		if fl.Name == name {
			return fl, true
		}
	}
	return Field{}, false
}

// Field is one field of a tracepoint record.
type Field struct {
	Name string
	// Type is the C type text as the format file spells it before the
	// name: "const char *", "pid_t", "char" for char comm[16], and
	// "__data_loc char[]" for a dynamic array.
	Type   string
	Offset int
	Size   int
	Signed bool // the format file's signed flag, unreliable for syscall arguments (see Int)
	// Array is set for "name[N]" and "name[]"; ArrayLen is N, or 0 for a
	// flexible array or a length the format file gives as an expression.
	Array    bool
	ArrayLen int
	// DataLoc marks a __data_loc field: a 32-bit word holding the offset
	// (low 16 bits) and length (high 16 bits) of data later in the record.
	DataLoc bool
	// AddrSpace is where a pointer field points: user space for the
	// syscalls category, whose fields are the syscall's raw arguments,
	// and kernel space elsewhere. It is meaningless for non-pointers.
	AddrSpace AddrSpace
}

// Pointer reports whether the field holds a pointer.
func (f Field) Pointer() bool {
	return !f.DataLoc && !f.Array && strings.HasSuffix(f.Type, "*")
}

// Decl returns the field's declaration as `bpftrace -lv` lists it, e.g.
// "char prev_comm[16]" or "__data_loc char[] filename".
func (f Field) Decl() string {
	switch {
	case f.Array && f.ArrayLen > 0:
		return fmt.Sprintf("%s %s[%d]", f.Type, f.Name, f.ArrayLen)
	case f.Array:
		return f.Type + " " + f.Name + "[]"
	}
	return f.Type + " " + f.Name
}

// ReadFormat reads and parses the format file of tracepoint category:name.
// It returns an error wrapping [ErrNoTracepoint] when there is no such
// tracepoint.
func ReadFormat(category, name string) (*Format, error) {
	if category == "" || name == "" || strings.ContainsAny(category+name, "/\x00") || category == ".." || name == ".." {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", category, name, ErrNoTracepoint)
	}
	dir, err := TracefsDir()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "events", category, name, "format"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", category, name, ErrNoTracepoint)
	}
	if err != nil {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", category, name, err)
	}
	f, err := ParseFormat(category, data)
	if err != nil {
		return nil, fmt.Errorf("tracepoint %s:%s: %w", category, name, err)
	}
	return f, nil
}

// ParseFormat parses the text of a tracepoint format file. category, which
// the file does not state, decides the address space of pointer fields.
func ParseFormat(category string, data []byte) (*Format, error) {
	f := &Format{Category: category}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20) // print fmt lines can be long
	for lineno := 1; sc.Scan(); lineno++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "name:"):
			f.Name = strings.TrimSpace(line[len("name:"):])
		case strings.HasPrefix(line, "ID:"):
			var id uint32
			if _, err := fmt.Sscan(strings.TrimSpace(line[len("ID:"):]), &id); err != nil {
				return nil, fmt.Errorf("format line %d: bad ID %q", lineno, line)
			}
			f.ID = id
		case strings.HasPrefix(line, "field:"), strings.HasPrefix(line, "field special:"):
			fl, err := parseField(line)
			if err != nil {
				return nil, fmt.Errorf("format line %d: %w", lineno, err)
			}
			if category == "syscalls" {
				fl.AddrSpace = UserSpace
			}
			if strings.HasPrefix(fl.Name, "common_") {
				f.Common = append(f.Common, fl)
			} else {
				f.Fields = append(f.Fields, fl)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("format: %w", err)
	}
	if f.Name == "" {
		return nil, errors.New("format: no name line")
	}
	return f, nil
}

// parseField parses one line such as
// "field:char prev_comm[16];	offset:8;	size:16;	signed:0;".
func parseField(line string) (Field, error) {
	var fl Field
	var dim string
	seen := map[string]bool{}
	for item := range strings.SplitSeq(line, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, ":")
		if !ok {
			return fl, fmt.Errorf("bad field item %q", item)
		}
		seen[key] = true
		var err error
		switch key {
		case "field", "field special":
			dim, err = parseDecl(&fl, strings.TrimSpace(val))
		case "offset":
			fl.Offset, err = atoi(val)
		case "size":
			fl.Size, err = atoi(val)
		case "signed":
			var s int
			s, err = atoi(val)
			fl.Signed = s != 0
		}
		if err != nil {
			return fl, fmt.Errorf("field %q: %w", line, err)
		}
	}
	if !seen["offset"] || !seen["size"] {
		return fl, fmt.Errorf("field %q: offset or size missing", line)
	}
	if n, err := atoi(dim); err == nil {
		fl.ArrayLen = n
	} else if elem, ok := cInts[stripQualifiers(fl.Type)]; ok && dim != "" {
		// An expression such as sizeof(...): derive the length from
		// the size when the element type's size is known.
		fl.ArrayLen = fl.Size / elem.size
	}
	return fl, nil
}

// parseDecl splits a C declaration such as "const char * filename" or
// "char comm[16]" into type text and name. It returns the array dimension
// text, "" for a scalar.
func parseDecl(fl *Field, decl string) (dim string, err error) {
	full := decl
	if strings.HasSuffix(decl, "]") {
		// The dimension may be an expression with spaces of its own,
		// as in "__u8 saddr[sizeof(struct sockaddr_in6)]" on old kernels.
		open := strings.IndexByte(decl, '[')
		if open < 0 {
			return "", fmt.Errorf("bad declaration %q", full)
		}
		decl, dim = decl[:open], decl[open+1:len(decl)-1]
		if !balanced(dim) {
			return "", fmt.Errorf("bad declaration %q", full)
		}
		fl.Array = true
	}
	i := strings.LastIndexAny(decl, " \t")
	if i < 0 {
		return "", fmt.Errorf("declaration %q has no type", full)
	}
	fl.Type = strings.TrimSpace(decl[:i])
	fl.Name = decl[i+1:]
	if fl.Type == "" || fl.Name == "" || strings.ContainsAny(fl.Name, "[]") {
		return "", fmt.Errorf("bad declaration %q", full)
	}
	fl.DataLoc = strings.HasPrefix(fl.Type, "__data_loc ")
	return dim, nil
}

// balanced reports whether the brackets in s pair up.
func balanced(s string) bool {
	depth := 0
	for _, c := range []byte(s) {
		switch c {
		case '[':
			depth++
		case ']':
			if depth--; depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// atoi parses a non-negative decimal number, ignoring surrounding space.
func atoi(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty number")
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad number %q", s)
		}
		n = n*10 + int(c-'0')
		if n > 1<<31 {
			return 0, fmt.Errorf("number %q too large", s)
		}
	}
	return n, nil
}
