package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildTuma builds this command into dir with the given build tags ("" for none).
func buildTuma(t *testing.T, dir, tags string) string {
	t.Helper()
	bin := filepath.Join(dir, "tuma")
	args := []string{"build", "-o", bin}
	if tags != "" {
		bin += "-" + tags
		args = []string{"build", "-tags", tags, "-o", bin}
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// symbols lists a binary's text symbols (go tool nm).
func symbols(t *testing.T, bin string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm %s: %v", bin, err)
	}
	syms := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && (f[1] == "T" || f[1] == "t") {
			syms[f[2]] = true
		}
	}
	return syms
}

// faultHooks are the symbols of every fault hook: the methods of Faults that a faults_on.go
// keeps out of line (//go:noinline), as "<import path>.Faults.<method>".
func faultHooks(t *testing.T, root string) []string {
	t.Helper()
	var hooks []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "faults_on.go" {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Doc == nil || !strings.Contains(commentText(fn.Doc), "//go:noinline") {
				continue
			}
			if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok && id.Name == "Faults" {
				hooks = append(hooks, module+filepath.ToSlash(dir)+".Faults."+fn.Name.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hooks
}

// commentText is a comment group's raw lines (its Text method drops //go: directives).
func commentText(g *ast.CommentGroup) string {
	var b strings.Builder
	for _, c := range g.List {
		b.WriteString(c.Text + "\n")
	}
	return b.String()
}

// A default build refuses TUMA_FAULTS and has no fault hook at all, nor any of the lab; the
// faults build (the drills' own tests) accepts TUMA_FAULTS and keeps every hook, so the
// symbol check is able to fail.
func TestFaultsOnlyInTheFaultsBuild(t *testing.T) {
	dir := t.TempDir()
	plain, faulty := buildTuma(t, dir, ""), buildTuma(t, dir, "faults")
	hooks := faultHooks(t, "../..")
	if len(hooks) < 3 {
		t.Fatalf("found %d fault hooks (%v); want persistence's and cmd/tuma/app's at least", len(hooks), hooks)
	}
	t.Logf("fault hooks: %v", hooks)

	config := func(bin string) (string, error) {
		cmd := exec.Command(bin, "config")
		cmd.Env = append(os.Environ(), "TUMA_FAULTS=skip-refunds", "TUMA_ENV=development")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	if out, err := config(plain); err == nil || !strings.Contains(out, "TUMA_FAULTS") || !strings.Contains(out, "-tags faults") {
		t.Errorf("TUMA_FAULTS=skip-refunds tuma config: %v\n%s\nwant it refused, naming TUMA_FAULTS and -tags faults", err, out)
	}
	if out, err := config(faulty); err != nil || !strings.Contains(out, "skip-refunds") {
		t.Errorf("TUMA_FAULTS=skip-refunds tuma-faults config: %v\n%s\nwant it accepted", err, out)
	}

	plainSyms, faultySyms := symbols(t, plain), symbols(t, faulty)
	for _, h := range hooks {
		if plainSyms[h] {
			t.Errorf("the default build has the fault hook %s", h)
		}
		if !faultySyms[h] {
			t.Errorf("the faults build lacks the fault hook %s: the check above proves nothing", h)
		}
	}
	for s := range plainSyms {
		rest, ours := strings.CutPrefix(s, module)
		if !ours {
			continue
		}
		if strings.Contains(rest, ".Faults.") {
			t.Errorf("the default build has %s", s)
		}
		if pkg, _, _ := strings.Cut(rest, "."); within(pkg, "bench") {
			t.Errorf("the default build links the lab: %s", s)
		}
	}
}
