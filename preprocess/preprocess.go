package preprocess

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"kinst.dev/kinst/syntax"
)

// DefaultSystemDirs is where <...> headers are looked for after the -I
// directories, in clang's order on Debian for x86-64.
var DefaultSystemDirs = []string{"/usr/local/include", "/usr/include/x86_64-linux-gnu", "/usr/include"}

// Config says where headers are and what is defined before the program.
type Config struct {
	// IncludeDirs are searched, in order, for both forms of #include
	// (bpftrace's -I); their headers are included in full.
	IncludeDirs []string
	// Includes are read before the program as if it began with
	// #include "FILE" for each (bpftrace's --include).
	Includes []string
	// SystemDirs replace DefaultSystemDirs when not nil. Headers found
	// there contribute macros only.
	SystemDirs []string
	// BTF, when set and true, says the kernel has BTF:
	// BPFTRACE_HAVE_BTF is defined. It is asked only when the program
	// has directives.
	BTF func() bool
	// CacheDir, when not "", is where the effects of the program's
	// #include directives that make no text (system headers, and its own
	// headers of macros only) are kept for the next run: see
	// DefaultCacheDir.
	CacheDir string
}

// A Result is a preprocessed program.
type Result struct {
	File *syntax.File
	// Warnings are messages for the user that do not stop compilation:
	// absent system headers (one message for all), #warning directives.
	Warnings []string

	macros map[string]*macro
	hits   int // #include directives the cache answered
}

// maxErrors bounds how many errors one run reports.
const maxErrors = 10

// maxDepth bounds #include nesting, which is how an #include cycle ends.
const maxDepth = 200

// maxExpansion bounds the tokens macro expansion reads in one run: a few
// lines of #define can otherwise ask for more than memory holds.
const maxExpansion = 1 << 20

// Preprocess runs the preprocessor over a program's source. name is how
// messages call the program; #include "..." looks in its directory
// first. Errors are a syntax.ErrorList.
func Preprocess(name string, src []byte, conf *Config) (*Result, error) {
	if conf == nil {
		conf = &Config{}
	}
	if len(conf.Includes) == 0 && !hasDirective(src) {
		return &Result{File: syntax.NewFile(name, src)}, nil
	}
	p := newPP(conf)
	main := &source{file: syntax.NewFile(name, src), text: src, dir: filepath.Dir(name), found: -1}
	if len(conf.Includes) > 0 {
		var b strings.Builder
		for _, f := range conf.Includes {
			fmt.Fprintf(&b, "#include %q\n", f)
		}
		p.run(&source{file: syntax.NewFile("<command line>", []byte(b.String())), text: []byte(b.String()), dir: ".", found: -1})
	}
	p.run(main)
	if len(p.missing) > 0 {
		then := "kinst goes on with the kernel's BTF types"
		if !p.btf {
			then = "the kernel has no BTF either, so the types they declare are unknown"
		}
		p.warnings = append(p.warnings, fmt.Sprintf("%s not found: %s", strings.Join(p.missing, ", "), then))
	}
	p.loadLazy()
	res := &Result{File: syntax.NewMappedFile(name, p.out.buf, p.out.spans), Warnings: p.warnings, macros: p.macros, hits: p.hits}
	if len(p.errs) > 0 {
		p.errs.Sort()
		return res, p.errs
	}
	return res, nil
}

// hasDirective reports whether src has a line starting with '#' other
// than an interpreter line: only then is there work for the
// preprocessor.
func hasDirective(src []byte) bool {
	for i := 0; i < len(src); {
		j := i
		for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
			j++
		}
		if j < len(src) && src[j] == '#' && (j > 0 || j+1 >= len(src) || src[j+1] != '!') {
			return true
		}
		n := bytes.IndexByte(src[j:], '\n')
		if n < 0 {
			return false
		}
		i = j + n + 1
	}
	return false
}

// pp is one run of the preprocessor.
type pp struct {
	btf      bool
	dirs     []string // -I directories, then the system ones
	nUser    int      // how many of dirs are -I directories
	macros   map[string]*macro
	conds    []cond
	depth    int
	once     map[string]bool
	headers  map[string]*header // by path
	expanded int                // tokens macro expansion has read
	stats    map[string]fileID  // isFile's answers
	braces   int                // the depth of braces in the text so far
	missing  []string
	warnings []string
	errs     syntax.ErrorList
	out      output
	cacheDir string
	rec      *recording // while an include runs for the cache
	hits     int
	lazy     []*source // sources of cached macros, read when needed
}

// cond is one open #if.
type cond struct {
	at     token // the directive's name, for "#if without #endif"
	parent bool  // the enclosing region is active
	taken  bool  // a branch was taken
	active bool  // the current branch is active
	sawEl  bool  // #else was seen
}

func newPP(conf *Config) *pp {
	sys := conf.SystemDirs
	if sys == nil {
		sys = DefaultSystemDirs
	}
	btf := conf.BTF != nil && conf.BTF()
	p := &pp{btf: btf, macros: predefined(btf), once: map[string]bool{}, headers: map[string]*header{}, stats: map[string]fileID{}, cacheDir: conf.CacheDir}
	p.dirs = append(append(p.dirs, conf.IncludeDirs...), sys...)
	p.nUser = len(conf.IncludeDirs)
	return p
}

func (p *pp) errorf(t token, format string, args ...any) {
	if len(p.errs) >= maxErrors {
		return
	}
	p.errs.Add(t.src.file, t.src.pos(t.off), t.src.pos(t.end), format, args...)
}

func (p *pp) active() bool { return len(p.conds) == 0 || p.conds[len(p.conds)-1].active }

// run preprocesses a top-level source.
func (p *pp) run(src *source) {
	p.file(src, nil)
}

// file preprocesses one source's tokens: directives take effect, text
// in active regions of full sources goes to the output.
func (p *pp) file(src *source, toks []token) {
	if toks == nil {
		if src.system {
			p.systemFile(src)
			return
		}
		toks = lex(src, &p.errs)
	}
	p.tokens(src, toks)
}

// tokens preprocesses a full source's tokens.
func (p *pp) tokens(src *source, toks []token) {
	base := len(p.conds)
	for i := 0; i < len(toks); {
		if toks[i].bol && toks[i].is(tPunct, "#") {
			j := i + 1
			for j < len(toks) && !toks[j].bol {
				j++
			}
			p.directive(src, toks[i], toks[i+1:j])
			i = j
			continue
		}
		j := i + 1
		for j < len(toks) && !(toks[j].bol && toks[j].is(tPunct, "#")) {
			j++
		}
		if !src.system && p.active() {
			p.emit(p.expand(p.attachPoints(toks[i:j])))
		}
		i = j
	}
	p.closeConds(base)
}

// attachPoints marks the names in probes' attach points, which bpftrace
// does not expand as macros: outside braces, a run of tokens with no
// space between them that holds a ':' (kprobe:f, tracepoint:sched:x,
// uprobe:/bin/sh:main). A ?: written without spaces in a predicate
// looks the same and is not expanded either. run is copied before it
// is marked: it may be a header's tokens, read again.
func (p *pp) attachPoints(run []token) []token {
	copied := false
	for g := 0; g < len(run); {
		e := g + 1
		for e < len(run) && !run[e].space {
			e++
		}
		if p.braces == 0 && slices.ContainsFunc(run[g:e], func(t token) bool { return t.is(tPunct, ":") }) {
			if !copied {
				run, copied = slices.Clone(run), true
			}
			for k := g; k < e; k++ {
				run[k].noexp = true
			}
		}
		for _, t := range run[g:e] {
			switch {
			case t.is(tPunct, "{"):
				p.braces++
			case t.is(tPunct, "}") && p.braces > 0:
				p.braces--
			}
		}
		g = e
	}
	return run
}

// systemFile runs a system header's directives as the lexer finds them,
// keeping no tokens but macro bodies: a system header's text makes no
// tokens, and a skipped region's directives are read only as far as
// their names. It returns the macro of the file's include guard, if it
// has one.
func (p *pp) systemFile(src *source) (guard string) {
	l := newLexer(src, &p.errs)
	base := len(p.conds)
	var line []token
	first, closed := true, false
	t, ok := l.next()
	for ok {
		hash := t
		line = line[:0]
		for t, ok = l.next(); ok && !t.bol; t, ok = l.next() {
			line = append(line, t)
			if len(line) == 1 && !p.active() && !conditionals[t.text] {
				l.i = l.skipLine(l.i)
			}
		}
		if !hash.is(tPunct, "#") || len(line) == 0 {
			continue
		}
		switch {
		case first:
			guard = guardName(line)
		case closed:
			guard = "" // a directive after the guard's #endif
		case len(p.conds) == base+1 && (line[0].text == "else" || strings.HasPrefix(line[0].text, "elif")):
			guard = "" // the file has something for when the guard is defined
		}
		first = false
		p.directive(src, hash, line)
		closed = len(p.conds) == base
	}
	p.closeConds(base)
	if !closed {
		return ""
	}
	return guard
}

// conditionals are the directives that matter in a skipped region.
var conditionals = map[string]bool{
	"if": true, "ifdef": true, "ifndef": true, "elif": true, "else": true, "endif": true, "elifdef": true, "elifndef": true,
}

// closeConds reports the #if directives a file left open and forgets
// them.
func (p *pp) closeConds(base int) {
	for _, c := range p.conds[base:] {
		p.errorf(c.at, "#%s without #endif", c.at.text)
	}
	p.conds = p.conds[:base]
}

// directive carries out one directive; hash is its '#', args the rest of
// its line.
func (p *pp) directive(src *source, hash token, args []token) {
	if len(args) == 0 {
		return // the null directive
	}
	name := args[0]
	rest := args[1:]
	if conditionals[name.text] {
		p.conditional(name, rest)
		return
	}
	if !p.active() {
		return // only conditionals matter in a skipped region
	}
	switch name.text {
	case "define":
		p.define(src, name, rest)
	case "undef":
		if len(rest) == 0 || rest[0].kind != tIdent {
			p.errorf(name, "#undef needs a macro name")
			return
		}
		delete(p.macros, rest[0].text)
	case "include", "include_next":
		if p.cacheDir != "" && p.rec == nil && !src.system {
			p.cachedInclude(src, name, rest)
		} else {
			p.include(src, name, rest)
		}
	case "error":
		p.errorf(name, "#error %s", lineText(rest))
	case "warning":
		pos := src.file.Position(src.pos(name.off))
		p.warnings = append(p.warnings, fmt.Sprintf("%s: #warning %s", pos, lineText(rest)))
	case "pragma":
		if len(rest) > 0 && rest[0].text == "once" {
			p.once[src.file.Name] = true
		}
	case "line", "ident", "sccs":
	default:
		if name.kind == tNumber {
			return // a line marker: # 1 "file"
		}
		p.errorf(name, "unknown directive #%s", name.text)
	}
}

// lineText is a directive's text as written, for #error and #warning.
func lineText(toks []token) string {
	if len(toks) == 0 {
		return ""
	}
	first, last := toks[0], toks[len(toks)-1]
	return string(first.src.text[first.off:last.end])
}

// conditional handles #if, #ifdef, #ifndef, #elif, #else and #endif, in
// skipped regions too, where a new #if only nests.
func (p *pp) conditional(name token, rest []token) {
	switch name.text {
	case "if", "ifdef", "ifndef":
		parent := p.active()
		c := cond{at: name, parent: parent}
		if parent {
			c.active = p.test(name, rest)
			c.taken = c.active
		}
		p.conds = append(p.conds, c)
		return
	}
	if len(p.conds) == 0 {
		p.errorf(name, "#%s without #if", name.text)
		return
	}
	c := &p.conds[len(p.conds)-1]
	switch name.text {
	case "endif":
		p.conds = p.conds[:len(p.conds)-1]
	case "else":
		if c.sawEl {
			p.errorf(name, "#else after #else")
		}
		c.sawEl = true
		c.active = c.parent && !c.taken
		c.taken = true
	default: // elif, elifdef, elifndef
		if c.sawEl {
			p.errorf(name, "#%s after #else", name.text)
		}
		c.active = false
		if c.parent && !c.taken {
			c.active = p.test(name, rest)
			c.taken = c.active
		}
	}
}

// test evaluates a conditional directive's condition.
func (p *pp) test(name token, rest []token) bool {
	switch name.text {
	case "if", "elif":
		if len(rest) == 0 {
			p.errorf(name, "#%s needs an expression", name.text)
			return false
		}
		v, err := p.eval(rest, false)
		if err != nil {
			p.addError(err)
			return false
		}
		return v.v != 0
	}
	if len(rest) == 0 || rest[0].kind != tIdent {
		p.errorf(name, "#%s needs a macro name", name.text)
		return false
	}
	_, def := p.macros[rest[0].text]
	return def == (name.text == "ifdef" || name.text == "elifdef")
}

func (p *pp) addError(err error) {
	var e *syntax.Error
	if errors.As(err, &e) && len(p.errs) < maxErrors {
		p.errs = append(p.errs, e)
	}
}

// include reads the header an #include or #include_next names.
func (p *pp) include(src *source, name token, rest []token) {
	if len(rest) > 0 && rest[0].kind != tString && !rest[0].is(tPunct, "<") {
		rest = p.expand(rest) // #include MACRO
	}
	file, angle, ok := headerName(rest)
	if !ok {
		p.errorf(name, "#%s expects \"FILE\" or <FILE>", name.text)
		return
	}
	if p.depth >= maxDepth {
		p.errorf(name, "#include nested more than %d deep", maxDepth)
		return
	}
	path, found, system, err := p.find(src, file, angle, name.text == "include_next")
	if err != nil {
		// What a header includes is its business: a system header's
		// missing pieces, like a missing <...> header, are not the
		// program's error.
		if !angle && !src.system {
			p.errorf(rest[0], "%s", err)
			return
		}
		if text, ok := compilerHeaders[file]; ok {
			if text != "" {
				b := []byte(text)
				p.file(&source{file: syntax.NewFile("<built-in "+file+">", b), text: b, system: true, found: -1}, nil)
			}
			return
		}
		if angle {
			p.noteMissing("<" + file + ">")
		} else {
			p.noteMissing(`"` + file + `"`)
		}
		return
	}
	if p.once[path] {
		return
	}
	system = src.system || system
	h := p.headers[path]
	if h != nil {
		p.dep(path, h.id)
	}
	if h != nil && h.guard != "" && p.macros[h.guard] != nil {
		return // the header's include guard keeps it out
	}
	// A header read in one mode and included again in the other (a
	// system header that is also in a -I directory) is read again. A
	// system header is lexed anew each time, as its directives are run,
	// unless its include guard keeps it out.
	if h == nil || h.src.system != system || h.src.found != found {
		text, id, err := readFile(path)
		if err != nil {
			p.errorf(rest[0], "%v", err)
			return
		}
		p.dep(path, id)
		inc := &source{
			file:   syntax.NewFile(path, text),
			text:   text,
			dir:    filepath.Dir(path),
			system: system,
			found:  found,
		}
		h = &header{src: inc, id: id}
		if !system {
			h.toks = lex(inc, &p.errs)
			h.guard = guard(h.toks)
		}
		p.headers[path] = h
	}
	p.depth++
	if system {
		h.guard = p.systemFile(h.src)
	} else {
		p.tokens(h.src, h.toks)
	}
	p.depth--
}

// A header is a file read once per run, however often it is included.
type header struct {
	src   *source
	id    fileID  // what was read
	toks  []token // for a header included in full
	guard string  // the macro of its include guard, if it has one
}

// guard returns X when toks are all inside #ifndef X (or #if !defined X)
// and the #endif that closes it, the usual include guard.
func guard(toks []token) string {
	if len(toks) == 0 || !toks[0].is(tPunct, "#") {
		return ""
	}
	j := 1
	for j < len(toks) && !toks[j].bol {
		j++
	}
	name := guardName(toks[1:j])
	if name == "" {
		return ""
	}
	// The guard's #endif must be the file's last directive, closing the
	// first, with no #else or #elif of the first's: count the nesting.
	depth := 0
	for i := 0; i < len(toks); i++ {
		if !toks[i].bol || !toks[i].is(tPunct, "#") || i+1 >= len(toks) {
			continue
		}
		switch toks[i+1].text {
		case "if", "ifdef", "ifndef":
			depth++
		case "else", "elif", "elifdef", "elifndef":
			if depth == 1 {
				return ""
			}
		case "endif":
			depth--
			if depth == 0 {
				for j := i + 2; j < len(toks); j++ {
					if toks[j].bol {
						return "" // something follows the guard
					}
				}
				return name
			}
		}
	}
	return ""
}

// guardName returns X when a directive's tokens (after the '#') are
// ifndef X, if !defined X or if !defined(X): how include guards start.
func guardName(line []token) string {
	is := func(i int, kind kind, text string) bool {
		return i < len(line) && line[i].kind == kind && (text == "" || line[i].text == text)
	}
	switch {
	case is(0, tIdent, "ifndef") && is(1, tIdent, "") && len(line) == 2:
		return line[1].text
	case is(0, tIdent, "if") && is(1, tPunct, "!") && is(2, tIdent, "defined"):
		if is(3, tIdent, "") && len(line) == 4 {
			return line[3].text
		}
		if is(3, tPunct, "(") && is(4, tIdent, "") && is(5, tPunct, ")") && len(line) == 6 {
			return line[4].text
		}
	}
	return ""
}

// compilerHeaders come with a C compiler rather than with libc, which
// includes them; when they are absent kinst uses its own text for them,
// empty where they hold nothing a program can use without C
// declarations. glibc's <limits.h> leaves the limits of the types to the
// compiler's.
var compilerHeaders = map[string]string{
	"stddef.h": "", "stdarg.h": "", "stdbool.h": "", "float.h": "",
	"stdalign.h": "", "stdnoreturn.h": "", "iso646.h": "",
	"limits.h": `#define CHAR_BIT __CHAR_BIT__
#define SCHAR_MAX __SCHAR_MAX__
#define SCHAR_MIN (-SCHAR_MAX - 1)
#define UCHAR_MAX (SCHAR_MAX * 2 + 1)
#define CHAR_MIN SCHAR_MIN
#define CHAR_MAX SCHAR_MAX
#define SHRT_MAX __SHRT_MAX__
#define SHRT_MIN (-SHRT_MAX - 1)
#define USHRT_MAX (SHRT_MAX * 2 + 1)
#define INT_MAX __INT_MAX__
#define INT_MIN (-INT_MAX - 1)
#define UINT_MAX (INT_MAX * 2U + 1U)
#define LONG_MAX __LONG_MAX__
#define LONG_MIN (-LONG_MAX - 1L)
#define ULONG_MAX (LONG_MAX * 2UL + 1UL)
#define LLONG_MAX __LONG_LONG_MAX__
#define LLONG_MIN (-LLONG_MAX - 1LL)
#define ULLONG_MAX (LLONG_MAX * 2ULL + 1ULL)
`,
}

func (p *pp) noteMissing(h string) {
	for _, m := range p.missing {
		if m == h {
			return
		}
	}
	p.missing = append(p.missing, h)
}

// headerName reads "FILE" or <FILE> from an #include's tokens.
func headerName(toks []token) (file string, angle, ok bool) {
	if len(toks) == 0 {
		return "", false, false
	}
	if t := toks[0]; t.kind == tString {
		return strings.TrimSuffix(strings.TrimPrefix(t.text, `"`), `"`), false, len(t.text) > 2 && strings.HasSuffix(t.text, `"`)
	}
	if !toks[0].is(tPunct, "<") {
		return "", false, false
	}
	var b strings.Builder
	for i, t := range toks[1:] {
		if t.is(tPunct, ">") {
			return b.String(), true, b.Len() > 0
		}
		if i > 0 && t.space {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return "", true, false
}

// find resolves a header: "..." first in the including file's
// directory, then both forms in the -I and system directories;
// #include_next starts after the directory the including file was found
// in. system says the header is in a system directory.
func (p *pp) find(src *source, file string, angle, next bool) (path string, found int, system bool, err error) {
	if filepath.IsAbs(file) {
		if !p.isFile(file) {
			if _, err := os.Stat(file); err == nil {
				return "", 0, false, fmt.Errorf("header %q is not a regular file", file)
			}
			return "", 0, false, fmt.Errorf("header %q not found", file)
		}
		return file, -1, src.system, nil
	}
	start := 0
	if next && src.found >= 0 {
		start = src.found + 1
	} else if !angle {
		if f := filepath.Join(src.dir, file); p.isFile(f) {
			return f, src.found, src.system, nil
		}
	}
	for i := start; i < len(p.dirs); i++ {
		if f := filepath.Join(p.dirs[i], file); p.isFile(f) {
			return f, i, i >= p.nUser, nil
		}
	}
	where := append([]string(nil), p.dirs[start:]...)
	if !angle && !next {
		where = append([]string{src.dir}, where...)
	}
	return "", 0, false, fmt.Errorf("header %q not found in %s", file, strings.Join(where, ", "))
}

// isFile reports whether path is a regular file: a device or a pipe
// (#include "/dev/zero") would never end. Answers are kept for the run:
// guarded headers are looked for again at every #include.
func (p *pp) isFile(path string) bool {
	id, ok := p.stats[path]
	if !ok {
		id = statID(path)
		p.stats[path] = id
	}
	p.dep(path, id)
	return id != fileID{}
}

// Names returns the names of the macros defined at the end of the
// program, sorted.
func (r *Result) Names() []string {
	names := make([]string, 0, len(r.macros))
	for n := range r.macros {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
