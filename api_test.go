package kinst_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestAPISelfContained fails when an exported identifier's signature
// names a type of another of kinst's packages: the types of exported
// functions, methods, variables and constants, exported struct fields
// and interface methods, and what a type definition or an alias stands
// for. Everything a caller must name lives in package kinst, so that
// the stages' packages can change with kinst's needs.
func TestAPISelfContained(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("reading the package's export data needs the go command: %v", err)
	}
	const module = "kinst.dev/kinst"
	// go list -export builds the package and its dependencies (from the
	// build cache) and says where their export data is.
	out, err := exec.Command(goCmd, "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		path, file, _ := strings.Cut(sc.Text(), " ")
		exports[path] = file
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	pkg, err := imp.Import(module)
	if err != nil {
		t.Fatal(err)
	}

	// foreign reports each named type of another of kinst's packages
	// that t refers to, as what names it: its types are checked where
	// they are declared.
	foreign := func(what string, typ types.Type) []string {
		var found []string
		var walk func(what string, t types.Type)
		walk = func(what string, t types.Type) {
			switch t := t.(type) {
			case *types.Alias, *types.Named:
				obj := t.(interface{ Obj() *types.TypeName }).Obj()
				if obj.Pkg() != nil && obj.Pkg().Path() != module && strings.HasPrefix(obj.Pkg().Path(), module+"/") {
					found = append(found, fmt.Sprintf("%s: %s.%s", what, obj.Pkg().Path(), obj.Name()))
				}
			case *types.Pointer:
				walk(what, t.Elem())
			case *types.Slice:
				walk(what, t.Elem())
			case *types.Array:
				walk(what, t.Elem())
			case *types.Map:
				walk(what, t.Key())
				walk(what, t.Elem())
			case *types.Chan:
				walk(what, t.Elem())
			case *types.Signature:
				for v := range t.Params().Variables() {
					walk(what, v.Type())
				}
				for v := range t.Results().Variables() {
					walk(what, v.Type())
				}
			case *types.Struct:
				for f := range t.Fields() {
					if f.Exported() {
						walk(what+"."+f.Name(), f.Type())
					}
				}
			case *types.Interface:
				for m := range t.Methods() {
					if m.Exported() {
						walk(what+"."+m.Name(), m.Type())
					}
				}
				for e := range t.EmbeddedTypes() {
					walk(what, e)
				}
			}
		}
		walk(what, typ)
		return found
	}

	var found []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		tn, ok := obj.(*types.TypeName)
		if !ok {
			found = append(found, foreign(name, obj.Type())...)
			continue
		}
		switch typ := obj.Type().(type) {
		case *types.Alias:
			found = append(found, foreign(name, typ.Rhs())...)
		case *types.Named:
			found = append(found, foreign(name, typ.Underlying())...)
			for m := range typ.Methods() {
				if m.Exported() {
					found = append(found, foreign(name+"."+m.Name(), m.Type())...)
				}
			}
		default:
			t.Errorf("%s: a type name of %T", tn.Name(), typ)
		}
	}
	for _, f := range found {
		t.Errorf("%s: a type of another of kinst's packages in the API", f)
	}
}
