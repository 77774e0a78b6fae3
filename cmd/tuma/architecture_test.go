package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tuma-sms/tuma/"

// importRules say which of the project's packages a package may not import (ARCHITECTURE.md,
// "Which room may use which"). A package is matched by its path or a parent's: a rule for
// "persistence" holds for persistence/redis too.
var importRules = []struct {
	pkg    string
	forbid []string
	why    string
}{
	{"carriers", []string{"actors", "persistence", "transport", "bench", "cmd"}, "the numbering plan, segmentation and links know nothing of the engine"},
	{"persistence", []string{"actors", "transport", "bench", "cmd"}, "the store serves every room and depends on none"},
	{"actors", []string{"transport", "bench", "cmd"}, "the engine takes commands, not HTTP requests"},
	{"transport/auth", []string{"transport/api", "actors"}, "adapters to the outside are used by the front door, not the other way"},
	{"transport/mail", []string{"transport/api", "actors"}, "adapters to the outside are used by the front door, not the other way"},
	{"transport/payments", []string{"transport/api", "actors"}, "adapters to the outside are used by the front door, not the other way"},
	{"transport/smppserver", []string{"transport/api", "transport/web"}, "the SMPP edge sends through the interface it declares, not the HTTP front door"},
	{"transport", []string{"bench", "cmd"}, "the front door is wired by cmd, never the reverse"},
	{"bench/drill", []string{"actors", "persistence", "transport", "carriers", "cmd"}, "drills see a node only as an operator does: over HTTP and its database"},
	{"cmd/tuma", []string{"bench"}, "the server binary links none of the lab (cmd/tuma-lab does)"},
	{"migrations", []string{"actors", "persistence", "transport", "carriers", "bench", "cmd"}, "SQL files, embedded"},
}

// imports maps each of the project's package folders (relative to the module root) to the
// project packages its non-test files import.
func imports(t *testing.T, root string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		if out[dir] == nil {
			out[dir] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(p, module); ok {
				out[dir][rest] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func within(pkg, room string) bool { return pkg == room || strings.HasPrefix(pkg, room+"/") }

// violations lists every import the rules forbid.
func violations(pkgs map[string]map[string]bool) []string {
	var out []string
	for pkg, imps := range pkgs {
		for imp := range imps {
			if within(imp, "cmd") && !within(pkg, "cmd") {
				out = append(out, pkg+" imports "+imp+": nothing imports cmd")
			}
			if within(imp, "bench") && !within(pkg, "bench") && pkg != "cmd/tuma-lab" {
				out = append(out, pkg+" imports "+imp+": only the lab binary, cmd/tuma-lab, imports bench")
			}
			if g, ok := groupOf(pkg); ok {
				if h, ok := groupOf(imp); ok && h != g && parentOf(pkg) == parentOf(imp) {
					out = append(out, pkg+" imports "+imp+": a handler group uses its own collaborators, never another group's")
				}
			}
			for _, r := range importRules {
				if !within(pkg, r.pkg) {
					continue
				}
				for _, f := range r.forbid {
					if within(imp, f) && !within(imp, pkg) {
						out = append(out, pkg+" imports "+imp+": "+r.why)
					}
				}
			}
		}
	}
	return out
}

// groupRooms hold the front door's handler groups, one package each (transport/api/sms …).
var groupRooms = []string{"transport/api", "transport/web"}

// groupOf names the handler group pkg belongs to ("transport/api/sms" for
// transport/api/sms/x), if any.
func groupOf(pkg string) (string, bool) {
	for _, room := range groupRooms {
		if rest, ok := strings.CutPrefix(pkg, room+"/"); ok {
			name, _, _ := strings.Cut(rest, "/")
			return room + "/" + name, true
		}
	}
	return "", false
}

func parentOf(pkg string) string {
	g, _ := groupOf(pkg)
	return g[:strings.LastIndex(g, "/")]
}

// Each room imports only what ARCHITECTURE.md allows it.
func TestImportRules(t *testing.T) {
	pkgs := imports(t, "../..")
	if len(pkgs) < 10 || pkgs["actors"] == nil || !pkgs["actors"]["persistence"] {
		t.Fatalf("found %d packages (actors importing persistence: %v); the walk missed the tree", len(pkgs), pkgs["actors"]["persistence"])
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// The rules catch what they are for.
func TestImportRulesCatchViolations(t *testing.T) {
	for _, bad := range [][2]string{
		{"persistence/redis", "transport/api"}, {"actors", "transport/api"}, {"carriers/sim", "actors"},
		{"transport/mail", "transport/api"}, {"transport/smppserver", "transport/api/sms"}, {"bench/drill", "persistence"}, {"persistence", "cmd/tuma/app"},
		{"transport/api/sms", "transport/api/wallet"}, {"transport/web/send", "transport/web/wallet"},
		{"cmd/tuma", "bench"}, {"cmd/tuma", "bench/drill"}, {"cmd/tuma/app", "bench/smtpsink"}, {"actors", "bench/smtpsink"},
	} {
		if v := violations(map[string]map[string]bool{bad[0]: {bad[1]: true}}); len(v) == 0 {
			t.Errorf("%s importing %s passes the rules", bad[0], bad[1])
		}
	}
	for _, ok := range [][2]string{{"actors", "persistence"}, {"transport/api", "actors"}, {"actors/simlink", "actors"},
		{"cmd/tuma-lab", "bench"}, {"cmd/tuma-lab", "bench/drill"}, {"bench/drill", "bench/smtpsink"},
		{"transport/api/sms", "transport/api"}, {"transport/web/send", "transport/api/sms"}, {"transport/web/send", "transport/web"}} {
		if v := violations(map[string]map[string]bool{ok[0]: {ok[1]: true}}); len(v) > 0 {
			t.Errorf("%s importing %s is refused: %v", ok[0], ok[1], v)
		}
	}
}
