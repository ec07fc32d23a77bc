package difftest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Program is one corpus program and how to run it.
type Program struct {
	Name    string   // file name without ".bt"
	Path    string   // the file, as Load found it
	Covers  string   // what the program covers: its first comment line
	Options []string // command-line options from "run:" lines, before expansion
	Args    []string // positional parameters from "args:" lines, before expansion
	Env     []string // NAME=value settings from "env:" lines
}

// ErrHeader reports a corpus program whose leading comments are malformed.
var ErrHeader = errors.New("bad corpus header")

// Parse reads a program's header from its source.
func Parse(name string, src []byte) (*Program, error) {
	p := &Program{Name: name}
	lines := strings.Split(string(src), "\n")
	for i, line := range lines {
		text, ok := strings.CutPrefix(line, "//")
		if !ok {
			break
		}
		text = strings.TrimSpace(text)
		if i == 0 {
			if text == "" || directive(text) != "" {
				return nil, fmt.Errorf("%s:1: %w: the first line must say what the program covers", name, ErrHeader)
			}
			p.Covers = text
			continue
		}
		key := directive(text)
		if key == "" {
			continue
		}
		words, err := splitWords(strings.TrimSpace(text[len(key)+1:]))
		if err == nil && len(words) == 0 {
			err = errors.New("nothing after the colon")
		}
		if err == nil {
			switch key {
			case "run":
				err = checkOptions(words)
				p.Options = append(p.Options, words...)
			case "args":
				p.Args = append(p.Args, words...)
			case "env":
				err = checkEnv(words)
				p.Env = append(p.Env, words...)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %s: %v", name, i+1, ErrHeader, key, err)
		}
	}
	if p.Covers == "" {
		return nil, fmt.Errorf("%s:1: %w: no leading comment saying what the program covers", name, ErrHeader)
	}
	return p, nil
}

// directive returns the key of a header line such as "run: -c CMD", or ""
// for a line of prose.
func directive(text string) string {
	for _, key := range []string{"run", "args", "env"} {
		if strings.HasPrefix(text, key+":") {
			return key
		}
	}
	return ""
}

// checkOptions accepts only options that both tools read the same way and
// that leave the output on standard output.
func checkOptions(words []string) error {
	for i := 0; i < len(words); i++ {
		switch words[i] {
		case "--unsafe":
			continue
		case "-c", "-I":
		case "-f":
			if i+1 < len(words) && words[i+1] != "text" && words[i+1] != "json" {
				return fmt.Errorf("-f %s: want text or json", words[i+1])
			}
		default:
			return fmt.Errorf("option %q: only -c CMD, -f text|json, -I DIR and --unsafe are allowed", words[i])
		}
		if i+1 == len(words) {
			return fmt.Errorf("option %s needs a value", words[i])
		}
		i++
	}
	return nil
}

var envName = regexp.MustCompile(`^BPFTRACE_[A-Z_]+=`)

// checkEnv accepts BPFTRACE_* settings, the names both tools read.
func checkEnv(words []string) error {
	for _, w := range words {
		if !envName.MatchString(w) {
			return fmt.Errorf("%q: want BPFTRACE_NAME=value", w)
		}
	}
	return nil
}

// splitWords splits s into words as a shell does, with single quotes,
// double quotes and backslash escapes outside single quotes.
func splitWords(s string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			word.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case escaped:
		return nil, errors.New("backslash at the end")
	case quote != 0:
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// Load reads every .bt program in dir, in name order.
func Load(dir string) ([]*Program, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.bt"))
	if err != nil {
		return nil, fmt.Errorf("load corpus: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("load corpus: no .bt files in %s", dir)
	}
	slices.Sort(files)
	progs := make([]*Program, 0, len(files))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("load corpus: %w", err)
		}
		p, err := Parse(strings.TrimSuffix(filepath.Base(f), ".bt"), src)
		if err != nil {
			return nil, fmt.Errorf("load corpus: %w", err)
		}
		p.Path = f
		progs = append(progs, p)
	}
	return progs, nil
}

// ErrPlaceholder reports a {name} in a program's header that Argv was not
// given a value for.
var ErrPlaceholder = errors.New("unknown placeholder")

var placeholder = regexp.MustCompile(`\{[a-z]+\}`)

// Argv returns the arguments to run p with under either tool: its options,
// "--", its file and its positional parameters, with each {name} replaced
// by vars[name]. The "--" lets parameters start with "-", which getopt
// would otherwise read as options.
func (p *Program) Argv(vars map[string]string) ([]string, error) {
	argv := make([]string, 0, len(p.Options)+2+len(p.Args))
	argv = append(argv, p.Options...)
	argv = append(argv, "--", p.Path)
	argv = append(argv, p.Args...)
	var unknown []string
	for i, a := range argv {
		argv[i] = placeholder.ReplaceAllStringFunc(a, func(m string) string {
			v, ok := vars[m[1:len(m)-1]]
			if !ok {
				unknown = append(unknown, m)
			}
			return v
		})
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%s: %w: %s", p.Name, ErrPlaceholder, strings.Join(unknown, ", "))
	}
	return argv, nil
}

// JSON reports whether p runs with -f json.
func (p *Program) JSON() bool {
	for i := 0; i+1 < len(p.Options); i += 2 {
		if p.Options[i] == "-f" && p.Options[i+1] == "json" {
			return true
		}
	}
	return false
}

var attachLine = regexp.MustCompile(`(?m)^(Attaching [0-9]+ probes?\.\.\.|\{"type": "attached_probes", "data": \{"probes": [0-9]+\}\})\n`)

// StripAttach removes the first "Attaching N probes..." line, or its JSON
// record, from a tool's output: the tools count probes differently, and
// the count is not part of what the comparison is about.
func StripAttach(out []byte) []byte {
	loc := attachLine.FindIndex(out)
	if loc == nil {
		return out
	}
	return append(out[:loc[0]:loc[0]], out[loc[1]:]...)
}

// Diff returns a line diff that turns want into got: lines only in want
// start with "-", lines only in got with "+", and shared lines with " ".
// Lines with trailing spaces or control characters are shown quoted, and
// a missing final newline is noted. It returns "" when they are equal.
func Diff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	a, b := splitLines(want), splitLines(got)
	// Longest common subsequence by dynamic programming; corpus outputs are
	// small, and beyond a bound the diff shows everything as changed.
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	if n*m <= 1<<22 {
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if a[i] == b[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			sb.WriteString("  " + showLine(a[i]) + "\n")
			i++
			j++
		case j == m || (i < n && lcs[i+1][j] >= lcs[i][j+1]):
			sb.WriteString("- " + showLine(a[i]) + "\n")
			i++
		default:
			sb.WriteString("+ " + showLine(b[j]) + "\n")
			j++
		}
	}
	return sb.String()
}

// splitLines splits out into lines that keep their newlines, so that a
// last line without one differs from the same line with one.
func splitLines(out []byte) []string {
	lines := strings.SplitAfter(string(out), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// showLine renders a line for a diff: quoted if it has trailing spaces or
// control characters, and marked if it lacks its newline.
func showLine(l string) string {
	text, complete := strings.CutSuffix(l, "\n")
	if strings.TrimRight(text, " \t") != text || strings.ContainsFunc(text, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		text = strconv.Quote(text)
	}
	if !complete {
		text += " (no newline at end)"
	}
	return text
}
