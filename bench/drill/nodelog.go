package drill

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
)

// engineTimeouts reads a node's JSON log for the requests that failed because the engine did
// not answer in time (actors.ErrBusy): their request ids. Such a request had claimed its
// Idempotency-Key and handed the send to the engine, so its outcome is unknown.
func engineTimeouts(logPath string) (map[string]bool, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"request failed"`)) || !bytes.Contains(line, []byte("the engine did not answer in time")) {
			continue
		}
		var entry struct {
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal(line, &entry) == nil && entry.RequestID != "" {
			out[entry.RequestID] = true
		}
	}
	return out, sc.Err()
}

// lapses reads a node's log for the stops of a lapsed node (paused past its limit): how many
// there were, and the writes and commands they refused.
func lapses(logPath string) (stops int, refused, commands int64, err error) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"a lapsed node stops"`)) {
			continue
		}
		var entry struct {
			Refused  int64 `json:"refused_writes"`
			Commands int64 `json:"refused_commands"`
		}
		if json.Unmarshal(line, &entry) == nil {
			stops++
			refused += entry.Refused
			commands += entry.Commands
		}
	}
	return stops, refused, commands, sc.Err()
}
