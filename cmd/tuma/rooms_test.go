package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The rooms' sizes (issue 31): no package under transport/ holds more than maxPackageLines of
// non-test code, and no handler group (a Handler of transport/api, the Pages of transport/web)
// holds more than maxCollaborators collaborators, so that each declares what it uses.
const (
	maxPackageLines  = 2500
	maxCollaborators = 10
)

// eachSource calls fn with the path and text of every non-test Go file below root.
func eachSource(t *testing.T, root string, fn func(path string, src []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err == nil {
			fn(path, b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// packageLines counts the lines of each package folder's non-test Go files below root.
func packageLines(t *testing.T, root string) map[string]int {
	t.Helper()
	out := map[string]int{}
	eachSource(t, root, func(path string, src []byte) {
		out[filepath.ToSlash(filepath.Dir(path))] += bytes.Count(src, []byte("\n"))
	})
	return out
}

func TestTransportPackagesStaySmall(t *testing.T) {
	lines := packageLines(t, "../../transport")
	if lines["../../transport/api"] < 500 {
		t.Fatalf("transport/api counted %d lines: the walk missed the tree", lines["../../transport/api"])
	}
	for pkg, n := range lines {
		if n > maxPackageLines {
			t.Errorf("%s holds %d lines of non-test code (at most %d): split it by what it provides", pkg, n, maxPackageLines)
		}
	}
}

// collaborators counts a handler type's fields other than its options; an embedded web.Kit
// counts as the four it holds.
func collaborators(st *ast.StructType) int {
	n := 0
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			if sel, ok := typeName(f.Type); ok && sel == "Kit" {
				n += 4
			} else {
				n++
			}
			continue
		}
		for _, name := range f.Names {
			if name.Name != "opts" {
				n++
			}
		}
	}
	return n
}

// typeName is the name of a (possibly qualified, generic or pointer) type.
func typeName(e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name, true
	case *ast.SelectorExpr:
		return x.Sel.Name, true
	case *ast.StarExpr:
		return typeName(x.X)
	case *ast.IndexExpr:
		return typeName(x.X)
	case *ast.IndexListExpr:
		return typeName(x.X)
	}
	return "", false
}

// crowdedHandlers lists the handler groups of a file's source with too many collaborators.
func crowdedHandlers(t *testing.T, path string, src any) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range g.Specs {
			ts, ok := s.(*ast.TypeSpec)
			if !ok || (ts.Name.Name != "Handler" && ts.Name.Name != "Pages") {
				continue
			}
			if st, ok := ts.Type.(*ast.StructType); ok && collaborators(st) > maxCollaborators {
				out = append(out, path+": "+ts.Name.Name)
			}
		}
	}
	return out
}

func TestHandlerGroupsHoldFewCollaborators(t *testing.T) {
	groups := 0
	for _, root := range []string{"../../transport/api", "../../transport/web"} {
		eachSource(t, root, func(path string, src []byte) {
			if bytes.Contains(src, []byte("\ntype Handler struct")) || bytes.Contains(src, []byte("\ntype Pages struct")) {
				groups++
			}
			for _, c := range crowdedHandlers(t, path, src) {
				t.Errorf("%s holds more than %d collaborators: declare a smaller interface or split the group", c, maxCollaborators)
			}
		})
	}
	if groups < 15 {
		t.Fatalf("found %d handler groups: the walk missed the tree", groups)
	}
}

// The collaborator count catches what it is for: eleven is refused, options and a Kit counted
// as the rules say.
func TestCollaboratorCountCatchesCrowds(t *testing.T) {
	crowded := "package x\ntype Handler struct{ opts Options; a, b, c, d, e, f, g, h, i, j, k int }\n"
	if got := crowdedHandlers(t, "x.go", crowded); len(got) != 1 {
		t.Errorf("eleven collaborators passed: %v", got)
	}
	fine := "package x\ntype Pages struct{ web.Kit[Ops, Store]; opts Options; a, b, c, d, e, f int }\n"
	if got := crowdedHandlers(t, "x.go", fine); len(got) != 0 {
		t.Errorf("a Kit, options and six collaborators refused: %v", got)
	}
	kit := "package x\ntype Pages struct{ web.Kit[Ops, Store]; a, b, c, d, e, f, g int }\n"
	if got := crowdedHandlers(t, "x.go", kit); len(got) != 1 {
		t.Errorf("a Kit and seven collaborators passed: %v", got)
	}
}
