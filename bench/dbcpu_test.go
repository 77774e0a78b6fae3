package bench

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseStat(t *testing.T) {
	line := "4242 (postgres: tuma (x) idle) S 1 2 3 0 -1 4194560 100 0 0 0 1234 567 0 0 20 0 1 0 99 0 0\n"
	comm, ticks, ok := parseStat([]byte(line))
	if !ok || comm != "postgres: tuma (x) idle" || ticks != 1234+567 {
		t.Fatalf("parseStat = %q, %d, %v; want the name with its parentheses and 1801 ticks", comm, ticks, ok)
	}
	for _, bad := range []string{"", "12 postgres S 1", "12 (postgres) S 1 2 3", "12 (postgres) S 1 2 3 4 5 6 7 8 9 10 x 5"} {
		if _, _, ok := parseStat([]byte(bad)); ok {
			t.Errorf("parseStat(%q) accepted a malformed line", bad)
		}
	}
}

func TestProcessCPU(t *testing.T) {
	dir := t.TempDir()
	write := func(pid, stat string) {
		if err := os.MkdirAll(filepath.Join(dir, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, pid, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("10", "10 (postgres) S 1 1 1 0 -1 0 0 0 0 0 300 100 0 0 20 0 1 0 1 0 0")
	write("11", "11 (postgres) S 1 1 1 0 -1 0 0 0 0 0 50 50 0 0 20 0 1 0 1 0 0")
	write("12", "12 (tuma) S 1 1 1 0 -1 0 0 0 0 0 999 999 0 0 20 0 1 0 1 0 0")
	got, err := processCPU(dir, "postgres")
	if err != nil || got != 5 {
		t.Fatalf("processCPU = %v, %v; want 5 s (500 ticks)", got, err)
	}
	if _, err := processCPU(dir, "mysqld"); err == nil {
		t.Fatal("processCPU found a process that is not there")
	}
}
