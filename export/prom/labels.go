package prom

import (
	"slices"

	"kinst.dev/kinst/codegen"
	"kinst.dev/kinst/syntax"
)

// KeyLabels names the key labels of each map, by map name, after what
// its keys are: a builtin (comm, pid), a field (args->filename gives
// filename), a variable ($fd gives fd), or the one thing a call such as
// str() reads. A key written differently at two places, or whose name
// would clash, keeps its place name (key, key0, key1, …).
func KeyLabels(out *codegen.Output) map[string][]string {
	seen := map[string][]string{}
	for _, p := range out.Programs {
		if p.Probe == nil || p.Probe.Syntax == nil {
			continue
		}
		syntax.Inspect(p.Probe.Syntax, func(n syntax.Node) bool {
			m, ok := n.(*syntax.MapExpr)
			if !ok || m.Keys == nil {
				return true
			}
			name := "@" + m.Name
			names := make([]string, len(m.Keys))
			for i, k := range m.Keys {
				names[i] = keyName(k)
			}
			if prev, ok := seen[name]; ok {
				for i := range prev {
					if i >= len(names) || prev[i] != names[i] {
						prev[i] = ""
					}
				}
				return true
			}
			seen[name] = names
			return true
		})
	}
	labels := map[string][]string{}
	for name, names := range seen {
		final := labelNames(len(names))
		for i, n := range names {
			// A name twice in one key, or one of the place names
			// another key may keep, is no one's.
			if n != "" && !reserved[n] && validLabel(n) && count(names, n) == 1 && !slices.Contains(final, n) {
				final[i] = n
			}
		}
		labels[name] = final
	}
	return labels
}

// reserved are label names Prometheus gives a meaning, or kinst does.
var reserved = map[string]bool{"le": true, "quantile": true, "value": true, "job": true, "instance": true}

// validLabel reports whether n is a label name Prometheus takes,
// [a-zA-Z_][a-zA-Z0-9_]*, checked by hand: a regular expression compiled
// at package initialisation cost every run of kinst, exporter or not.
func validLabel(n string) bool {
	for i, c := range n {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return n != ""
}

func count(names []string, n string) int {
	c := 0
	for _, m := range names {
		if m == n {
			c++
		}
	}
	return c
}

// keyName is what a key expression is called, or "".
func keyName(x syntax.Expr) string {
	switch x := x.(type) {
	case *syntax.Ident:
		return x.Name
	case *syntax.VarExpr:
		return x.Name
	case *syntax.FieldExpr:
		return x.Name
	case *syntax.CallExpr:
		if len(x.Args) == 1 {
			if n := keyName(x.Args[0]); n != "" {
				return n
			}
		}
		if x.Fun != nil {
			return x.Fun.Name
		}
	}
	return ""
}
