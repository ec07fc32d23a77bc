package kernel

import "strings"

// HasGlob reports whether s contains a wildcard that [Match] expands.
func HasGlob(s string) bool {
	return strings.ContainsAny(s, "*?")
}

// Match reports whether name matches pattern, where '*' matches any run of
// characters (including none) and '?' matches exactly one. All other
// characters, '[' and '\' included, match themselves: probe names such as
// C++ "operator[]" must not be read as character classes.
func Match(pattern, name string) bool {
	p, n := 0, 0
	// Position of the last '*' seen and where name stood when it was seen,
	// so a failed match can let that star absorb one more character.
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case star >= 0:
			mark++
			p, n = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
