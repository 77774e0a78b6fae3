// Package npmtest installs the npm fixtures of the interoperability tests (programs on
// packages nobody on this project wrote, locked in their package-lock.json) into temporary
// folders, for tests only.
package npmtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// Fixture is one fixture folder, installed at most once per test binary.
type Fixture struct {
	Src   string   // the fixture's folder, relative to the test's package
	Files []string // what to copy from it: package.json, package-lock.json and the programs
	once  sync.Once
	dir   string
	err   error
}

// Dir copies the fixture's files into a temporary folder and runs npm ci there, the first
// time; it returns that folder. Node.js and npm must be installed (deploy/dev/test-tools.sh).
func (f *Fixture) Dir() (string, error) {
	f.once.Do(func() {
		if f.dir, f.err = os.MkdirTemp("", "tuma-npm-"+filepath.Base(f.Src)+"-"); f.err != nil {
			return
		}
		for _, name := range f.Files {
			b, err := os.ReadFile(filepath.Join(f.Src, name))
			if err != nil {
				f.err = err
				return
			}
			if f.err = os.WriteFile(filepath.Join(f.dir, name), b, 0o644); f.err != nil {
				return
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefer-offline")
		cmd.Dir = f.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			f.err = errors.Join(errors.New("npm ci"), err, errors.New(string(out)))
		}
	})
	return f.dir, f.err
}
