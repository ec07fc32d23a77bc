package chunked

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

// fakeT records what a test would report; Fatal ends the goroutine, as
// the testing package's does.
type fakeT struct {
	testing.TB
	msgs []string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func (f *fakeT) Fatal(args ...any) {
	f.msgs = append(f.msgs, fmt.Sprint(args...))
	runtime.Goexit()
}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// run calls fn with a fakeT and returns what it reported.
func run(fn func(t testing.TB)) []string {
	f := new(fakeT)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msgs
}

// write puts text in a file of its own and returns its name.
func write(t *testing.T, text string) string {
	name := filepath.Join(t.TempDir(), "errs.bt")
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

const sample = `BEGIN { @x = ; } // ERROR "expected expression, found ';'"
---
BEGIN {
	@x = 1 / 0; @y = $z // ERROR:7 "division by zero" ERROR ` + "`variable \\$z .*`" + `
}
---

BEGIN { }
---
`

func TestRead(t *testing.T) {
	name := write(t, sample)
	chunks := Read(t, name)
	if len(chunks) != 3 {
		t.Fatalf("got %d chunks, want 3", len(chunks))
	}
	type w struct {
		Line, Col int
		Text      string
	}
	tests := []struct {
		src   string
		line  int
		wants []w
	}{
		{`BEGIN { @x = ; } // ERROR "expected expression, found ';'"`, 1, []w{{1, 0, "expected expression, found ';'"}}},
		{"BEGIN {\n\t@x = 1 / 0; @y = $z // ERROR:7 \"division by zero\" ERROR `variable \\$z .*`\n}", 3, []w{{2, 7, "division by zero"}, {2, 0, `variable \$z .*`}}},
		{"\nBEGIN { }", 7, nil},
	}
	for i, tt := range tests {
		c := chunks[i]
		var got []w
		for _, x := range c.wants {
			got = append(got, w{x.line, x.col, x.text})
		}
		if string(c.Source) != tt.src || c.line != tt.line || c.file != name || !reflect.DeepEqual(got, tt.wants) {
			t.Errorf("chunk %d: source %q at %s:%d, expectations %v; want %q at line %d, %v", i, c.Source, c.file, c.line, got, tt.src, tt.line, tt.wants)
		}
	}
}

func TestCheck(t *testing.T) {
	name := write(t, sample)
	chunks := Read(t, name)
	at := func(s string) error { return errors.New(s) }
	tests := []struct {
		what  string
		chunk int
		err   error
		want  []string
	}{
		{"exact", 0, at("chunk:1:14: expected expression, found ';'"), nil},
		{"a list", 1, errors.Join(at("chunk:2:7: division by zero"), at("chunk:2:19: variable $z is used before it is assigned")), nil},
		{"no error wanted", 2, nil, nil},
		{"nothing came", 0, nil, []string{
			name + `:1: missing error: "expected expression, found ';'"`,
		}},
		{"one of two came", 1, at("chunk:2:19: variable $z is unknown"), []string{
			name + `:4: missing error at column 7: "division by zero"`,
		}},
		{"an extra one", 2, at("chunk:2:3: no probes"), []string{
			name + ":8: unexpected error at column 3: no probes",
		}},
		{"wrong line", 0, at("chunk:2:14: expected expression, found ';'"), []string{
			name + ":2: unexpected error at column 14: expected expression, found ';'",
			name + `:1: missing error: "expected expression, found ';'"`,
		}},
		{"wrong column", 1, errors.Join(at("chunk:2:8: division by zero"), at("chunk:2:19: variable $z is unknown")), []string{
			name + ":4: unexpected error at column 8: division by zero",
			name + `:4: missing error at column 7: "division by zero"`,
		}},
		{"part of the message", 0, at("chunk:1:14: expected expression"), []string{
			name + ":1: unexpected error at column 14: expected expression",
			name + `:1: missing error: "expected expression, found ';'"`,
		}},
		{"one expectation, two errors", 0, errors.Join(at("chunk:1:14: expected expression, found ';'"), at("chunk:1:14: expected expression, found ';'")), []string{
			name + ":1: unexpected error at column 14: expected expression, found ';'",
		}},
		{"another file", 2, at("header.h:1:1: unknown directive"), []string{
			name + ":7: unexpected error: header.h:1:1: unknown directive",
		}},
		{"no position", 2, at("chunk: no probes"), []string{
			name + ":7: unexpected error: chunk: no probes",
		}},
	}
	for _, tt := range tests {
		got := run(func(t testing.TB) { chunks[tt.chunk].Check(t, tt.err) })
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: reported\n%q\nwant\n%q", tt.what, got, tt.want)
		}
	}
}

func TestReadMalformed(t *testing.T) {
	tests := []struct{ text, want string }{
		{"BEGIN { } // ERROR oops", `:1: ERROR needs a quoted regular expression, found "oops"`},
		{"BEGIN { }\n---\nBEGIN { } // ERROR:0 \"x\"", `:3: ERROR: needs a column from 1, found "0 \"x\""`},
		{"BEGIN { } // ERROR:x \"x\"", `:1: ERROR: needs a column from 1, found "x \"x\""`},
		{"BEGIN { } // ERROR \"(\"", ":1: error parsing regexp: missing closing ): `^(?:()$`"},
		{"BEGIN { } // ERROR \"a\" and more", `:1: expected ERROR, found "and more"`},
		{"BEGIN { } // ERROR \"a", `:1: ERROR needs a quoted regular expression, found "\"a"`},
		{"---\n\n---\n", " holds no programs"},
	}
	for _, tt := range tests {
		name := write(t, tt.text)
		got := run(func(t testing.TB) { Read(t, name) })
		if want := []string{name + tt.want}; !reflect.DeepEqual(got, want) {
			t.Errorf("%q: reported %q, want %q", tt.text, got, want)
		}
	}
}
