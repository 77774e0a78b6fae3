// The database's CPU, for the figure a user pays for: a send's cost is the server's CPU and
// its PostgreSQL backends', and PostgreSQL does not report its own.

package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// clockTicks is the unit of /proc/PID/stat's times: USER_HZ, 100 on every Linux the
// project runs on (sysconf(_SC_CLK_TCK) is not reachable from Go without cgo).
const clockTicks = 100

// processCPU sums the CPU seconds (user and system) of this machine's processes named comm,
// read from procfs: PostgreSQL's postmaster and every backend, when comm is "postgres".
// Processes that end between two readings take their time with them; backends of a pool
// live as long as the server under test.
func processCPU(procfs, comm string) (float64, error) {
	dirs, err := filepath.Glob(filepath.Join(procfs, "[0-9]*"))
	if err != nil {
		return 0, err
	}
	var ticks uint64
	found := false
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone since the listing
		}
		name, t, ok := parseStat(b)
		if ok && name == comm {
			ticks += t
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("no %q process in %s (--db-cpu needs the database on this machine)", comm, procfs)
	}
	return float64(ticks) / clockTicks, nil
}

// parseStat reads a /proc/PID/stat line's command name and its utime+stime (fields 14 and
// 15). The name is in parentheses and may itself hold spaces and parentheses, so the fields
// are counted from the last ')'.
func parseStat(b []byte) (comm string, ticks uint64, ok bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	fields := bytes.Fields(b[end+1:]) // field 3 (state) onwards
	if len(fields) < 13 {
		return "", 0, false
	}
	u, err1 := strconv.ParseUint(string(fields[11]), 10, 64)
	s, err2 := strconv.ParseUint(string(fields[12]), 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return "", 0, false
	}
	return string(b[open+1 : end]), u + s, true
}
