package api

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// codesInSource returns the problem codes the front door's code raises, here and in the
// groups below: string literals given to NewProblem, InvalidAs or TooManyRequests (api.X
// outside this package), or assigned to a variable named code.
func codesInSource(t *testing.T) map[string]string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") && path != "problems.go" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		lit := func(e ast.Expr) {
			if bl, ok := e.(*ast.BasicLit); ok && bl.Kind == token.STRING {
				s, _ := strconv.Unquote(bl.Value)
				codes[s] = fset.Position(bl.Pos()).String()
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				name := ""
				switch fun := n.Fun.(type) {
				case *ast.Ident:
					name = fun.Name
				case *ast.SelectorExpr:
					if x, ok := fun.X.(*ast.Ident); ok && x.Name == "api" {
						name = fun.Sel.Name
					}
				}
				switch name {
				case "NewProblem", "InvalidAs", "TooManyRequests":
					if len(n.Args) > 0 {
						lit(n.Args[0])
					}
				}
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name == "code" && i < len(n.Rhs) {
						lit(n.Rhs[i])
					}
				}
			}
			return true
		})
	}
	if len(files) < 20 {
		t.Fatalf("found %d files; the walk missed the groups", len(files))
	}
	return codes
}

// The handlers, the catalogue and the published document name the same codes with the same
// statuses.
func TestProblemCatalogue(t *testing.T) {
	used := codesInSource(t)
	catalogued := map[string]ProblemType{}
	for _, p := range ProblemTypes() {
		if _, dup := catalogued[p.Code]; dup {
			t.Errorf("code %s is catalogued twice", p.Code)
		}
		catalogued[p.Code] = p
		if _, ok := used[p.Code]; !ok {
			t.Errorf("catalogued code %s is raised by no handler: drop it or use it", p.Code)
		}
	}
	for code, where := range used {
		if _, ok := catalogued[code]; !ok {
			t.Errorf("%s raises %q, which is not in the catalogue", where, code)
		}
	}

	var doc struct {
		Paths      map[string]map[string]struct{ Responses map[string]json.RawMessage } `json:"paths"`
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum        []string `json:"enum"`
					Description string   `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	code := doc.Components.Schemas["Problem"].Properties["code"]
	var want []string
	for _, p := range ProblemTypes() {
		want = append(want, p.Code)
		if !strings.Contains(code.Description, "`"+p.Code+"` | "+strconv.Itoa(p.Status)+" |") {
			t.Errorf("openapi.json Problem.code does not describe %s as %d", p.Code, p.Status)
		}
	}
	if got := slices.Clone(code.Enum); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("openapi.json Problem.code enum = %v; want the catalogue %v", got, want)
	}
	statuses := map[string]bool{}
	for _, ops := range doc.Paths {
		for _, op := range ops {
			for s := range op.Responses {
				statuses[s] = true
			}
		}
	}
	for _, p := range ProblemTypes() {
		if p.Code == "method_not_allowed" {
			continue // a path's, not an operation's: described once, in the document's info
		}
		if !statuses[strconv.Itoa(p.Status)] {
			t.Errorf("no operation in openapi.json answers %d, the status of %s", p.Status, p.Code)
		}
	}
}

func TestUnknownProblemCodePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("problem with an uncatalogued code did not panic")
		}
	}()
	NewProblem("no_such_code", "")
}
