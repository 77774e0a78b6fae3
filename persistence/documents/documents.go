// Package documents keeps uploaded documents (sender ID applications' files) as files in a
// folder, TUMA_DATA_DIR by default. Consumers declare the small interface they need, so an
// object store can take the folder's place.
package documents

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ErrTooLarge is a document over the size it was allowed; nothing of it is kept.
var ErrTooLarge = errors.New("document too large")

// Stored says what was written.
type Stored struct {
	Size   int64
	SHA256 []byte
}

// Folder keeps documents under a root folder, one file per key.
type Folder struct {
	root string
}

// Open returns the folder at root, creating it when missing.
func Open(root string) (*Folder, error) {
	if root == "" {
		return nil, errors.New("documents: no folder given")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("documents: %w", err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("documents: %w", err)
	}
	return &Folder{root: abs}, nil
}

// path maps a key to its file. Keys are made by the service, never taken from a client, but
// they are checked all the same: slash-separated segments of [a-z0-9._-], none "." or "..".
func (f *Folder) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") {
		return "", fmt.Errorf("documents: bad key %q", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", fmt.Errorf("documents: bad key %q", key)
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return "", fmt.Errorf("documents: bad key %q", key)
			}
		}
	}
	return filepath.Join(f.root, filepath.FromSlash(key)), nil
}

// Put writes what r yields under key, at most limit bytes (ErrTooLarge beyond, with nothing
// kept), and makes it durable before it returns: the file and its folder are synced, so a
// document an answer acknowledged survives a crash.
func (f *Folder) Put(ctx context.Context, key string, r io.Reader, limit int64) (Stored, error) {
	p, err := f.path(key)
	if err != nil {
		return Stored{}, err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return Stored{}, fmt.Errorf("documents: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return Stored{}, fmt.Errorf("documents: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(contextReader{ctx, r}, limit+1))
	if err != nil {
		return Stored{}, fmt.Errorf("documents: write %s: %w", key, err)
	}
	if n > limit {
		return Stored{}, ErrTooLarge
	}
	if err := tmp.Sync(); err != nil {
		return Stored{}, fmt.Errorf("documents: sync %s: %w", key, err)
	}
	if err := tmp.Close(); err != nil {
		return Stored{}, fmt.Errorf("documents: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return Stored{}, fmt.Errorf("documents: %w", err)
	}
	keep = true
	if err := syncDir(dir); err != nil {
		return Stored{}, err
	}
	return Stored{Size: n, SHA256: h.Sum(nil)}, nil
}

// Open reads the document stored under key.
func (f *Folder) Open(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := f.path(key)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// Delete removes a document (one written for a request that then failed); a missing one is
// not an error.
func (f *Folder) Delete(_ context.Context, key string) error {
	p, err := f.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("documents: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("documents: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("documents: sync %s: %w", dir, err)
	}
	return nil
}

// contextReader stops a copy when its context ends (a request past its deadline).
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
