package documents

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPutOpenDelete(t *testing.T) {
	f, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := bytes.Repeat([]byte("%PDF-1.4 "), 1000)
	st, err := f.Put(ctx, "accounts/a1/senders/s1/1/kra_pin-x", bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	if st.Size != int64(len(data)) || !bytes.Equal(st.SHA256, want[:]) {
		t.Errorf("stored %d bytes, sha %x; want %d, %x", st.Size, st.SHA256, len(data), want)
	}
	r, err := f.Open(ctx, "accounts/a1/senders/s1/1/kra_pin-x")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(r)
	r.Close()
	if !bytes.Equal(got, data) {
		t.Error("read back different bytes")
	}
	if err := f.Delete(ctx, "accounts/a1/senders/s1/1/kra_pin-x"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Open(ctx, "accounts/a1/senders/s1/1/kra_pin-x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("open after delete: %v; want not exist", err)
	}
}

// Over the limit nothing is kept, not even a temporary file.
func TestPutRefusesTooLarge(t *testing.T) {
	dir := t.TempDir()
	f, _ := Open(dir)
	_, err := f.Put(context.Background(), "a/big", strings.NewReader(strings.Repeat("x", 101)), 100)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("101 bytes with a limit of 100: %v; want ErrTooLarge", err)
	}
	var files []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, _ error) error {
		if info != nil && !info.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 0 {
		t.Errorf("files left behind: %v", files)
	}
}

func TestKeysCannotEscapeTheFolder(t *testing.T) {
	f, _ := Open(t.TempDir())
	for _, k := range []string{"", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "A/b", "a/b c", "a\\b"} {
		if _, err := f.Put(context.Background(), k, strings.NewReader("x"), 10); err == nil {
			t.Errorf("key %q accepted", k)
		}
	}
}
