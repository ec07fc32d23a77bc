package preprocess

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"kinst.dev/kinst/syntax"
)

// The cache keeps what an #include of the program's did to the
// preprocessor's state when it emitted no text: the macros it defined
// and undefined, the #pragma once files and the absent headers. glibc's
// <sys/socket.h> reads about twenty files and defines some thousand
// macros, which costs more than the rest of kinst's start-up; a hit
// costs a few dozen stats and one small read.
//
// An entry's name is a digest of everything the include's effect
// depends on besides files: the directive and its header name, the
// search directories, the including file's directory (for "...") and
// where it was found, the nesting depth, the #pragma once files, every macro defined
// at that point (the predefined ones and BPFTRACE_HAVE_BTF among them)
// and the kinst executable itself, whose preprocessor made the entry.
// The entry lists every path the include looked at, with the identity
// of the file there (device, inode, size, modification and change
// times) or its absence; a hit re-checks them all, so an edited,
// replaced, added or removed header is a miss. Entries are written to a
// temporary file and renamed into place, so concurrent runs read whole
// entries; an entry that does not decode, fails its checksum, or is
// not owned by the user running kinst (or is writable by others) is a
// miss and is replaced.

// DefaultCacheDir is where preprocessed headers are kept unless a
// caller says otherwise: /var/cache/kinst for root, else kinst under
// $XDG_CACHE_HOME or ~/.cache. It is "" when there is no such place.
func DefaultCacheDir() string {
	if os.Geteuid() == 0 {
		return "/var/cache/kinst"
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "kinst")
}

// cacheMagic starts every entry; it changes with the entry's format.
const cacheMagic = "kinst-pp-2\n"

// A fileID is what identifies a file's contents without reading them;
// the zero fileID says there is no regular file at the path.
type fileID struct{ dev, ino, size, mtime, ctime uint64 }

func idOf(st *syscall.Stat_t) fileID {
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fileID{}
	}
	return fileID{
		dev:   st.Dev,
		ino:   st.Ino,
		size:  uint64(st.Size),
		mtime: uint64(st.Mtim.Nano()),
		ctime: uint64(st.Ctim.Nano()),
	}
}

// statID returns the identity of the regular file at path, or the zero
// fileID.
func statID(path string) fileID {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileID{}
	}
	return idOf(&st)
}

// readFile reads a header and returns the identity of what it read.
func readFile(path string) ([]byte, fileID, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileID{}, err
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fileID{}, err
	}
	text, err := io.ReadAll(f)
	return text, idOf(&st), err
}

// A recording collects the paths an include looks at while it runs.
type recording struct {
	deps map[string]fileID
}

// dep notes that what the preprocessor did depends on the file at path
// being id.
func (p *pp) dep(path string, id fileID) {
	if p.rec != nil {
		p.rec.deps[path] = id
	}
}

// An entry is one include's effect.
type entry struct {
	deps    []dep
	files   []cachedFile // the sources the macros' tokens were read from
	defined []*macro
	srcOf   [][]int // for each defined macro's tokens, their file's index
	undef   []string
	once    []string
	missing []string
}

type dep struct {
	path string
	id   fileID
}

// A cachedFile is a source macros came from: a file on disk, read again
// only if a position in it is needed, or text kinst made (the built-in
// <limits.h>), kept in the entry.
type cachedFile struct {
	name string
	text []byte // nil for a file on disk
}

var exeOnce struct {
	sync.Once
	id fileID
}

// exeID identifies the running executable, whose preprocessor made the
// entries it reads.
func exeID() fileID {
	exeOnce.Do(func() {
		if path, err := os.Executable(); err == nil {
			exeOnce.id = statID(path)
		}
	})
	return exeOnce.id
}

// cacheKey names the entry for an #include of src's.
func (p *pp) cacheKey(src *source, name token, rest []token) string {
	var w encoder
	w.str(cacheMagic)
	w.id(exeID())
	w.str(name.text)
	for _, t := range rest {
		w.bool(t.space)
		w.str(t.text)
	}
	if len(rest) == 0 || !rest[0].is(tPunct, "<") {
		w.str(src.dir) // where "..." looks first
	}
	w.int(src.found)
	w.int(p.depth)
	w.strs(p.dirs)
	w.int(p.nUser)
	w.strs(slices.Sorted(maps.Keys(p.once)))
	for _, n := range slices.Sorted(maps.Keys(p.macros)) {
		w.macro(p.macros[n], nil)
	}
	sum := sha256.Sum256(w.b)
	return hex.EncodeToString(sum[:16])
}

// cachedInclude carries out an #include of a full source's through the
// cache: from an entry when one is valid, otherwise by running it and
// keeping its effect when it emitted no text and reported nothing.
func (p *pp) cachedInclude(src *source, name token, rest []token) {
	path := filepath.Join(p.cacheDir, p.cacheKey(src, name, rest))
	if e := loadEntry(path); e != nil && e.valid() {
		p.apply(e)
		p.hits++
		return
	}
	start := time.Now()
	before := maps.Clone(p.macros)
	onceBefore := maps.Clone(p.once)
	nErrs, nWarnings, nMissing, nOut := len(p.errs), len(p.warnings), len(p.missing), len(p.out.buf)
	p.rec = &recording{deps: map[string]fileID{}}
	p.include(src, name, rest)
	rec := p.rec
	p.rec = nil
	if len(p.errs) != nErrs || len(p.warnings) != nWarnings || len(p.out.buf) != nOut {
		return
	}
	if racy(rec.deps, start) {
		return
	}
	e := &entry{missing: p.missing[nMissing:]}
	for _, path := range slices.Sorted(maps.Keys(rec.deps)) {
		e.deps = append(e.deps, dep{path, rec.deps[path]})
	}
	for _, n := range slices.Sorted(maps.Keys(p.macros)) {
		if m := p.macros[n]; before[n] != m {
			e.defined = append(e.defined, m)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(before)) {
		if p.macros[n] == nil {
			e.undef = append(e.undef, n)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(p.once)) {
		if !onceBefore[f] {
			e.once = append(e.once, f)
		}
	}
	storeEntry(p.cacheDir, path, e.encode(rec.deps))
}

// racyMargin is how recently a header may have changed for an entry to
// depend on it. A file's times advance by clock ticks (up to 10 ms), and
// on some filesystems by seconds (FAT's by two): a header changed that
// close to being read can change again without its time or size saying
// so. The entry is left for a later run to make. As in git's index,
// only the modification time counts: the change time, which the entry
// keeps too, shows an edit that puts an old modification time back.
const racyMargin = 2 * time.Second

// racy reports whether any file deps names changed within racyMargin of
// start, when the include began reading them.
func racy(deps map[string]fileID, start time.Time) bool {
	since := uint64(start.Add(-racyMargin).UnixNano())
	for _, id := range deps {
		if id != (fileID{}) && id.mtime >= since {
			return true
		}
	}
	return false
}

// valid reports whether every path the entry depends on still holds
// what it held.
func (e *entry) valid() bool {
	for _, d := range e.deps {
		if statID(d.path) != d.id {
			return false
		}
	}
	return true
}

// apply does to p what the include did.
func (p *pp) apply(e *entry) {
	srcs := make([]*source, len(e.files))
	for i, f := range e.files {
		s := &source{file: syntax.NewFile(f.name, f.text), text: f.text, system: true, found: -1}
		if f.text == nil {
			s.lazy = true
			p.lazy = append(p.lazy, s)
		}
		srcs[i] = s
	}
	for i, m := range e.defined {
		for j := range m.body {
			m.body[j].src = srcs[e.srcOf[i][j]]
		}
		p.macros[m.name] = m
	}
	for _, n := range e.undef {
		delete(p.macros, n)
	}
	for _, f := range e.once {
		p.once[f] = true
	}
	for _, h := range e.missing {
		p.noteMissing(h)
	}
}

// load reads a source an entry named when a position in it is needed.
// A file that changed since the entry was checked gives positions in
// what it holds now.
func (s *source) load() {
	if !s.lazy {
		return
	}
	s.lazy = false
	text, err := os.ReadFile(s.file.Name)
	if err != nil {
		return
	}
	s.text = text
	*s.file = *syntax.NewFile(s.file.Name, text)
}

// loadLazy reads the sources that the output's positions or the errors
// point into.
func (p *pp) loadLazy() {
	if len(p.lazy) == 0 {
		return
	}
	used := map[*syntax.File]bool{}
	for _, s := range p.out.spans {
		used[s.Orig] = true
	}
	for _, e := range p.errs {
		used[e.File] = true
	}
	for _, s := range p.lazy {
		if used[s.file] {
			s.load()
		}
	}
}

// storeEntry writes an entry under a temporary name and renames it into
// place. A cache that cannot be written is no cache: nothing is
// reported.
func storeEntry(dir, path string, data []byte) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return
	}
	prune(dir)
}

// maxEntries bounds the cache: every set of macros a program defines
// before an #include makes an entry of its own, of some tens of KB for
// glibc's headers.
const maxEntries = 64

// prune removes the oldest entries beyond maxEntries. Entries are
// written only on misses, so the newest are the ones in use.
func prune(dir string) {
	des, err := os.ReadDir(dir)
	if err != nil || len(des) <= maxEntries {
		return
	}
	type aged struct {
		name string
		mod  time.Time
	}
	var all []aged
	for _, de := range des {
		if info, err := de.Info(); err == nil && info.Mode().IsRegular() && !strings.HasPrefix(de.Name(), ".") {
			all = append(all, aged{de.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return b.mod.Compare(a.mod) })
	for _, a := range all[min(len(all), maxEntries):] {
		os.Remove(filepath.Join(dir, a.name))
	}
}

// errCorrupt is any entry that does not decode.
var errCorrupt = errors.New("corrupt cache entry")

// loadEntry reads an entry; nil when there is none or it cannot be
// trusted.
func loadEntry(path string) *entry {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil ||
		st.Uid != uint32(os.Geteuid()) || st.Mode&0o022 != 0 || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil
	}
	e, err := decodeEntry(data)
	if err != nil {
		return nil
	}
	return e
}

// encode writes the entry: the magic, the dependencies, the sources,
// the macros, the rest, and a SHA-256 of all that. Tokens name their
// source by its index in the entry's list.
func (e *entry) encode(deps map[string]fileID) []byte {
	var w encoder
	w.str(cacheMagic)
	w.int(len(e.deps))
	for _, d := range e.deps {
		w.str(d.path)
		w.id(d.id)
	}
	index := map[*source]int{}
	var files []*source
	for _, m := range e.defined {
		for _, t := range m.body {
			if _, ok := index[t.src]; !ok {
				index[t.src] = len(files)
				files = append(files, t.src)
			}
		}
	}
	w.int(len(files))
	for _, s := range files {
		w.str(s.file.Name)
		// A file the include read is read again for positions; text kinst
		// made is kept.
		onDisk := deps[s.file.Name] != (fileID{}) && !s.lazy
		w.bool(!onDisk)
		if !onDisk {
			w.bytes(s.text)
		}
	}
	w.int(len(e.defined))
	total := 0
	for _, m := range e.defined {
		total += len(m.body)
	}
	w.int(total)
	for _, m := range e.defined {
		w.macro(m, index)
	}
	w.strs(e.undef)
	w.strs(e.once)
	w.strs(e.missing)
	return sealed(w.b)
}

// macro writes m's definition. With an index of the sources, an entry's
// form, it also writes where each token of the body came from; a key
// leaves positions out, which do not change what the macro means.
func (w *encoder) macro(m *macro, index map[*source]int) {
	w.str(m.name)
	w.bool(m.fn)
	w.bool(m.variadic)
	w.bool(m.user)
	w.str(m.special)
	w.strs(m.params)
	w.int(len(m.body))
	for _, t := range m.body {
		w.int(int(t.kind))
		w.bool(t.space)
		w.str(t.text)
		if index != nil {
			w.bool(t.bol)
			w.int(int(t.off))
			w.int(int(t.end))
			w.int(int(t.idx))
			w.int(index[t.src])
		}
	}
}

// sealed appends b's checksum to b.
func sealed(b []byte) []byte {
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

func decodeEntry(data []byte) (*entry, error) {
	if len(data) < sha256.Size {
		return nil, errCorrupt
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return nil, errCorrupt
	}
	r := decoder{b: body, s: string(body)}
	if r.str() != cacheMagic {
		return nil, errCorrupt
	}
	e := &entry{}
	e.deps = make([]dep, r.count())
	for i := range e.deps {
		e.deps[i] = dep{r.str(), r.id()}
	}
	e.files = make([]cachedFile, r.count())
	for i := range e.files {
		e.files[i].name = r.str()
		if r.bool() {
			e.files[i].text = r.bytes()
		}
	}
	// The macros and their tokens are allocated together: an entry holds
	// a thousand or more.
	macros := make([]macro, r.count())
	e.defined = make([]*macro, len(macros))
	e.srcOf = make([][]int, len(macros))
	toks := make([]token, r.count())
	srcOf := make([]int, len(toks))
	for i := range e.defined {
		m := &macros[i]
		*m = macro{name: r.str(), fn: r.bool(), variadic: r.bool(), user: r.bool(), special: r.str(), params: r.strs()}
		n := r.count()
		if n > len(toks) {
			r.fail()
			break
		}
		m.body, toks = toks[:n:n], toks[n:]
		e.srcOf[i], srcOf = srcOf[:n:n], srcOf[n:]
		for j := range m.body {
			t := &m.body[j]
			t.kind = kind(r.int())
			t.space = r.bool()
			t.text = r.str()
			t.bol = r.bool()
			t.off = int32(r.int())
			t.end = int32(r.int())
			t.idx = int32(r.int())
			f := r.int()
			if f < 0 || f >= len(e.files) {
				r.fail()
				f = 0
			}
			e.srcOf[i][j] = f
		}
		e.defined[i] = m
	}
	e.undef = r.strs()
	e.once = r.strs()
	e.missing = r.strs()
	if r.err != nil || len(r.b) != 0 {
		return nil, errCorrupt
	}
	return e, nil
}

// encoder and decoder write and read varints and length-prefixed
// strings.
type encoder struct{ b []byte }

func (w *encoder) int(v int)      { w.b = binary.AppendVarint(w.b, int64(v)) }
func (w *encoder) str(s string)   { w.int(len(s)); w.b = append(w.b, s...) }
func (w *encoder) bytes(b []byte) { w.int(len(b)); w.b = append(w.b, b...) }

func (w *encoder) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *encoder) strs(ss []string) {
	w.int(len(ss))
	for _, s := range ss {
		w.str(s)
	}
}

func (w *encoder) id(id fileID) {
	for _, v := range [...]uint64{id.dev, id.ino, id.size, id.mtime, id.ctime} {
		w.b = binary.AppendUvarint(w.b, v)
	}
}

// A decoder reads what an encoder wrote; after the first error every
// read returns zero values and err says why.
type decoder struct {
	b   []byte
	s   string // the whole input, which strings read share
	err error
}

func (r *decoder) fail() { r.err, r.b = errCorrupt, nil }

func (r *decoder) int() int {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *decoder) uint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a length, which cannot exceed the bytes left.
func (r *decoder) count() int {
	n := r.int()
	if n < 0 || n > len(r.b) {
		r.fail()
		return 0
	}
	return n
}

func (r *decoder) bytes() []byte {
	n := r.count()
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

func (r *decoder) str() string {
	n := r.count()
	at := len(r.s) - len(r.b)
	r.b = r.b[n:]
	return r.s[at : at+n]
}

func (r *decoder) bool() bool {
	if len(r.b) == 0 || r.b[0] > 1 {
		r.fail()
		return false
	}
	v := r.b[0] == 1
	r.b = r.b[1:]
	return v
}

func (r *decoder) strs() []string {
	ss := make([]string, r.count())
	for i := range ss {
		ss[i] = r.str()
	}
	return ss
}

func (r *decoder) id() fileID {
	return fileID{r.uint(), r.uint(), r.uint(), r.uint(), r.uint()}
}
