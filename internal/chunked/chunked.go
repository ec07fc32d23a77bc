package chunked

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Name is the name a test gives each chunk's source, so that Check can
// tell the chunk's own errors from those located elsewhere.
const Name = "chunk"

// separator is the line that ends one chunk and starts the next.
const separator = "---"

// marker starts the expectations of a line.
const marker = "// ERROR"

// A Chunk is one program of a chunked file with the errors it must give.
type Chunk struct {
	Source []byte // the program, without a final newline
	file   string
	line   int // line of file the chunk's first line is
	wants  []*want
}

// A want is one expected error.
type want struct {
	line int // within the chunk, from 1
	col  int // 0: any column
	re   *regexp.Regexp
	text string // as written, for messages
}

// Read reads a chunked file. A malformed expectation stops the test.
func Read(t testing.TB, filename string) []*Chunk {
	t.Helper()
	data, err := os.ReadFile(filename)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := parse(filename, string(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) == 0 {
		t.Fatalf("%s holds no programs", filename)
	}
	return chunks
}

// parse splits data into chunks and reads their expectations.
func parse(filename, data string) ([]*Chunk, error) {
	var chunks []*Chunk
	var lines []string
	start := 1
	flush := func() error {
		c := &Chunk{file: filename, line: start, Source: []byte(strings.Join(lines, "\n"))}
		if strings.TrimSpace(string(c.Source)) == "" {
			return nil // nothing between two separators, or after the last
		}
		for i, l := range lines {
			ws, err := parseWants(l)
			if err != nil {
				return fmt.Errorf("%s:%d: %w", filename, start+i, err)
			}
			for _, w := range ws {
				w.line = i + 1
			}
			c.wants = append(c.wants, ws...)
		}
		chunks = append(chunks, c)
		return nil
	}
	all := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	for i, l := range all {
		if strings.TrimRight(l, " \t") != separator {
			lines = append(lines, l)
			continue
		}
		if err := flush(); err != nil {
			return nil, err
		}
		lines, start = nil, i+2
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return chunks, nil
}

// parseWants reads the expectations written on line, if any.
func parseWants(line string) ([]*want, error) {
	i := strings.Index(line, marker)
	if i < 0 {
		return nil, nil
	}
	rest := line[i+len("// "):]
	var ws []*want
	for {
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		after, ok := strings.CutPrefix(rest, "ERROR")
		if !ok {
			return nil, fmt.Errorf("expected ERROR, found %q", rest)
		}
		w := new(want)
		if after, ok = strings.CutPrefix(after, ":"); ok {
			n := len(after) - len(strings.TrimLeft(after, "0123456789"))
			col, err := strconv.Atoi(after[:n])
			if err != nil || col < 1 {
				return nil, fmt.Errorf("ERROR: needs a column from 1, found %q", after)
			}
			w.col, after = col, after[n:]
		}
		after = strings.TrimLeft(after, " \t")
		q, err := strconv.QuotedPrefix(after)
		if err != nil {
			return nil, fmt.Errorf("ERROR needs a quoted regular expression, found %q", after)
		}
		w.text, _ = strconv.Unquote(q)
		if w.re, err = regexp.Compile("^(?:" + w.text + ")$"); err != nil {
			return nil, err
		}
		ws = append(ws, w)
		rest = after[len(q):]
	}
	return ws, nil
}

// Check compares err, the outcome of compiling c.Source under the name
// Name, with c's expectations, and reports every difference on t.
func (c *Chunk) Check(t testing.TB, err error) {
	t.Helper()
	matched := make([]bool, len(c.wants))
	for _, e := range flatten(err) {
		line, col, msg, ok := locate(e)
		if !ok {
			t.Errorf("%s:%d: unexpected error: %v", c.file, c.line, e)
			continue
		}
		found := false
		for i, w := range c.wants {
			if !matched[i] && w.line == line && (w.col == 0 || w.col == col) && w.re.MatchString(msg) {
				matched[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("%s:%d: unexpected error at column %d: %s", c.file, c.line+line-1, col, msg)
		}
	}
	for i, w := range c.wants {
		if !matched[i] {
			at := ""
			if w.col > 0 {
				at = fmt.Sprintf(" at column %d", w.col)
			}
			t.Errorf("%s:%d: missing error%s: %q", c.file, c.line+w.line-1, at, w.text)
		}
	}
}

// flatten returns the errors err lists, or err alone.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if l, ok := err.(interface{ Unwrap() []error }); ok {
		var all []error
		for _, e := range l.Unwrap() {
			all = append(all, flatten(e)...)
		}
		return all
	}
	return []error{err}
}

// locate splits "Name:line:col: msg"; ok is false for an error located
// in another file or nowhere.
func locate(e error) (line, col int, msg string, ok bool) {
	rest, ok := strings.CutPrefix(e.Error(), Name+":")
	if !ok {
		return 0, 0, "", false
	}
	pos, msg, ok := strings.Cut(rest, ": ")
	if !ok {
		return 0, 0, "", false
	}
	l, c, ok := strings.Cut(pos, ":")
	if !ok {
		return 0, 0, "", false
	}
	line, err1 := strconv.Atoi(l)
	col, err2 := strconv.Atoi(c)
	if err1 != nil || err2 != nil {
		return 0, 0, "", false
	}
	return line, col, msg, true
}
