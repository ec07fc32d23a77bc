package preprocess

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
}

// A Result is a preprocessed program.
type Result struct {
	File *syntax.File
	// Warnings are messages for the user that do not stop compilation:
	// absent system headers (one message for all), #warning directives.
	Warnings []string

	macros map[string]*macro
}

// maxErrors bounds how many errors one run reports.
const maxErrors = 10

// maxDepth bounds #include nesting, which is how an #include cycle ends.
const maxDepth = 200

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
		p.warnings = append(p.warnings, fmt.Sprintf("%s not found: kinst goes on with the kernel's BTF types", strings.Join(p.missing, ", ")))
	}
	res := &Result{File: syntax.NewMappedFile(name, p.out.buf, p.out.spans), Warnings: p.warnings, macros: p.macros}
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
		if j < len(src) && src[j] == '#' && (i > 0 || j+1 >= len(src) || src[j+1] != '!') {
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
	conf     *Config
	dirs     []string // -I directories, then the system ones
	nUser    int      // how many of dirs are -I directories
	macros   map[string]*macro
	conds    []cond
	depth    int
	once     map[string]bool
	missing  []string
	warnings []string
	errs     syntax.ErrorList
	out      output
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
	p := &pp{conf: conf, macros: predefined(conf.BTF != nil && conf.BTF()), once: map[string]bool{}}
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
	p.file(src, lex(src, &p.errs))
}

// file preprocesses one source's tokens: directives take effect, text
// in active regions of full sources goes to the output.
func (p *pp) file(src *source, toks []token) {
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
			p.emit(p.expand(toks[i:j], true))
		}
		i = j
	}
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
	if !p.active() {
		// Only the nesting of conditionals matters in a skipped region.
		switch name.text {
		case "if", "ifdef", "ifndef":
			p.conds = append(p.conds, cond{at: name})
		case "elif", "else", "endif", "elifdef", "elifndef":
			p.conditional(name, rest)
		}
		return
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
		p.include(src, name, rest)
	case "if", "ifdef", "ifndef", "elif", "else", "endif", "elifdef", "elifndef":
		p.conditional(name, rest)
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

// conditional handles #if, #ifdef, #ifndef, #elif, #else and #endif.
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
		rest = p.expand(rest, false) // #include MACRO
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
		if !angle {
			p.errorf(rest[0], "%s", err)
			return
		}
		if !compilerHeaders[file] {
			p.noteMissing("<" + file + ">")
		}
		return
	}
	if p.once[path] {
		return
	}
	text, err := os.ReadFile(path)
	if err != nil {
		p.errorf(rest[0], "%v", err)
		return
	}
	inc := &source{
		file:   syntax.NewFile(path, text),
		text:   text,
		dir:    filepath.Dir(path),
		system: src.system || system,
		found:  found,
	}
	p.depth++
	p.file(inc, lex(inc, &p.errs))
	p.depth--
}

// compilerHeaders come with a C compiler rather than with libc, and
// hold nothing a program can use without C declarations: their absence
// is not worth a warning.
var compilerHeaders = map[string]bool{
	"stddef.h": true, "stdarg.h": true, "stdbool.h": true, "float.h": true,
	"stdalign.h": true, "stdnoreturn.h": true, "iso646.h": true,
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
		if isFile(file) {
			return file, -1, src.system, nil
		}
		return "", 0, false, fmt.Errorf("%s: %w", file, fs.ErrNotExist)
	}
	start := 0
	if next && src.found >= 0 {
		start = src.found + 1
	} else if !angle {
		if f := filepath.Join(src.dir, file); isFile(f) {
			return f, src.found, src.system, nil
		}
	}
	for i := start; i < len(p.dirs); i++ {
		if f := filepath.Join(p.dirs[i], file); isFile(f) {
			return f, i, i >= p.nUser, nil
		}
	}
	where := append([]string(nil), p.dirs[start:]...)
	if !angle && !next {
		where = append([]string{src.dir}, where...)
	}
	return "", 0, false, fmt.Errorf("header %q not found in %s", file, strings.Join(where, ", "))
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
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
