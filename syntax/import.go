package syntax

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// An Import is import "path"; at the top level: a .bt file, or a folder
// whose .bt files are all imported.
type Import struct {
	ImportPos Pos
	Path      string
	PathPos   Pos
	PathEnd   Pos
}

func (i *Import) Pos() Pos { return i.ImportPos }
func (i *Import) End() Pos { return i.PathEnd }

// isImportStart reports whether a top-level token is the word import
// followed by a string.
func (p *parser) isImportStart() bool {
	return p.tok == PROBESPEC && p.lit == "import" && p.peek() == STRING
}

func (p *parser) parseImport() *Import {
	im := &Import{ImportPos: p.pos}
	p.s.off = p.file.Offset(p.pos)
	p.next() // the word again, as an ordinary token
	p.next()
	im.Path, im.PathPos, im.PathEnd = p.lit, p.pos, p.end
	p.next()
	if p.tok != SEMICOLON {
		p.errorExpected("';' after the import")
	}
	p.specs = true
	p.next()
	return im
}

// ResolveImports reads the files prog imports, and theirs, each once,
// and parses the program again with their text after its own, so that
// their probes, macros and declarations join it and errors in them name
// them. A path is relative to the folder of the file that imports it;
// a folder imports the .bt files in it. The returned error, if any, is
// an ErrorList.
func ResolveImports(prog *Program, dir string) (*Program, error) {
	if len(prog.Imports) == 0 {
		return prog, nil
	}
	r := &importer{seen: map[string]bool{}, src: append([]byte(nil), prog.File.Src...),
		spans: []Span{{Off: 0, Orig: prog.File}}}
	var stack []string
	if abs, err := filepath.Abs(prog.File.Name); err == nil {
		if _, err := os.Stat(abs); err == nil {
			stack = []string{abs}
			r.seen[abs] = true
		}
	}
	r.imports(prog.File, prog.Imports, dir, stack)
	if len(r.errs) > 0 {
		return nil, r.errs
	}
	return ParseFile(NewMappedFile(prog.File.Name, r.src, r.spans))
}

type importer struct {
	seen  map[string]bool // files imported, by absolute path
	src   []byte
	spans []Span
	errs  ErrorList
}

// imports reads the files of list, which f imports; stack holds the
// files being imported, to find cycles.
func (r *importer) imports(f *File, list []*Import, dir string, stack []string) {
	for _, im := range list {
		path := im.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if ext := filepath.Ext(path); ext == ".h" || ext == ".c" {
			r.errs.Add(f, im.PathPos, im.PathEnd, "cannot import %q: kinst imports bpftrace programs (.bt), not C", im.Path)
			continue
		}
		files, err := btFiles(path)
		if err != nil {
			r.errs.Add(f, im.PathPos, im.PathEnd, "cannot import %q: %v", im.Path, err)
			continue
		}
		for _, file := range files {
			abs, _ := filepath.Abs(file)
			if slices.Contains(stack, abs) {
				r.errs.Add(f, im.PathPos, im.PathEnd, "import cycle: %s imports itself through %q", filepath.Base(abs), im.Path)
				continue
			}
			if r.seen[abs] {
				continue
			}
			r.seen[abs] = true
			text, err := os.ReadFile(file)
			if err != nil {
				r.errs.Add(f, im.PathPos, im.PathEnd, "cannot import %q: %v", im.Path, err)
				continue
			}
			nf := NewFile(file, text)
			r.spans = append(r.spans, Span{Off: len(r.src) + 1, Orig: nf})
			r.src = append(r.src, '\n')
			r.src = append(r.src, text...)
			// Only the imports matter here: the whole text is parsed
			// again, and its errors reported, with the importer's.
			sub, _ := ParseFile(nf)
			r.imports(nf, sub.Imports, filepath.Dir(file), append(stack, abs))
		}
	}
}

// btFiles lists what importing path reads: path itself, or the .bt
// files of the folder path, in name order.
func btFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no such file or folder")
	}
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".bt") {
			files = append(files, filepath.Join(path, e.Name()))
		}
	}
	sort.Strings(files)
	return files, nil
}
