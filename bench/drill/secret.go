package drill

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// secrets are the credentials a run used (passwords, API keys, bearer and refresh tokens,
// verification codes, the admin token): none may appear in any node's log.
type secrets struct {
	mu     sync.Mutex
	values map[string]string // value → kind
}

func newSecrets() *secrets { return &secrets{values: map[string]string{}} }

// add remembers a secret of a kind ("password", "api key", …). Values under 6 bytes are too
// short to look for without false matches and are not remembered.
func (s *secrets) add(kind, value string) {
	if s == nil || len(value) < 6 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.values[value]; !ok {
		s.values[value] = kind
	}
}

func (s *secrets) snapshot() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.values))
	for k, v := range s.values {
		out[k] = v
	}
	return out
}

// leak is a secret found in a log.
type leak struct {
	kind, file string
	line       int
}

// scanLogs looks for every secret in every *.log file under dir. A secret of digits only
// (a verification code) counts only where no digit or '.' is next to it, so a timestamp's
// fraction never matches one.
func scanLogs(dir string, s map[string]string) (files int, bytesRead int64, leaks []leak, err error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return 0, 0, nil, err
	}
	slices.Sort(paths)
	needles := make([][]byte, 0, len(s))
	kinds := make([]string, 0, len(s))
	for v, k := range s {
		needles, kinds = append(needles, []byte(v)), append(kinds, k)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return files, bytesRead, leaks, err
		}
		files++
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Bytes()
			bytesRead += int64(len(line)) + 1
			for i, nd := range needles {
				if found(line, nd) {
					leaks = append(leaks, leak{kind: kinds[i], file: filepath.Base(p), line: n})
				}
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return files, bytesRead, leaks, fmt.Errorf("read %s: %w", p, err)
		}
	}
	return files, bytesRead, leaks, nil
}

func found(line, needle []byte) bool {
	digits := true
	for _, c := range needle {
		digits = digits && c >= '0' && c <= '9'
	}
	for off := 0; ; {
		i := bytes.Index(line[off:], needle)
		if i < 0 {
			return false
		}
		i += off
		if !digits {
			return true
		}
		before, after := byte(' '), byte(' ')
		if i > 0 {
			before = line[i-1]
		}
		if j := i + len(needle); j < len(line) {
			after = line[j]
		}
		if !isDigitOrDot(before) && !isDigitOrDot(after) {
			return true
		}
		off = i + 1
	}
}

func isDigitOrDot(c byte) bool { return c == '.' || (c >= '0' && c <= '9') }
