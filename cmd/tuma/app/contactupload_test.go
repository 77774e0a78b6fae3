package app_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// An import whose client stalls halfway through its upload holds nothing of the database: the
// account's other writes go on at once. The import used to begin (its connections, the
// account's lock) before the file was read, so a stalled upload made every add of the
// account wait, then fail, and a few such uploads took every connection of the node.
func TestStalledImportUploadHoldsNothing(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_REQUEST_TIMEOUT": "5s"})
	a := n.register("stalled@example.com")
	conn, err := net.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /contacts/import HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\n"+
		"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: %d\r\n\r\n", a.APIKey, 1<<20)
	fmt.Fprint(conn, "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\n\r\n")
	if _, err := conn.Write(bytes.Repeat([]byte("0700000000,Name,Surname\n"), 1000)); err != nil {
		t.Fatal(err)
	}
	// Give the node the part it was sent: an import that begins on it takes its lock (seen in
	// pg_locks) within moments; one that waits for the whole file never does.
	deadline := time.Now().Add(time.Second)
	for n.sqlInt(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted`) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	r := n.do("POST", "/contacts", map[string]any{"phone": "0799000001"}, key(a)...)
	if r.Status != 201 || time.Since(start) > 2*time.Second {
		t.Errorf("adding a contact while an upload stalls = %d after %v; want 201 at once:\n%s", r.Status, time.Since(start), r.Body)
	}
}

// An upload slower than the server's 30 s read timeout (a large file over a phone's
// connection) is read to its end and imported: it was cut off at 30 s, a 400 that imported
// nothing.
func TestSlowUploadOutlastsTheReadTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: it takes 33 s (the server's read timeout is 30 s)")
	}
	n := startNode(t, nil)
	a := n.register("slow-upload@example.com")
	var body bytes.Buffer
	body.WriteString("--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"c.csv\"\r\n\r\nphone,first_name\r\n")
	for i := range 1000 {
		fmt.Fprintf(&body, "07120%05d,Ann\r\n", i)
	}
	body.WriteString("\r\n--x--\r\n")
	conn, err := net.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /contacts/import HTTP/1.1\r\nHost: x\r\nX-API-Key: %s\r\nConnection: close\r\n"+
		"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: %d\r\n\r\n", a.APIKey, body.Len())
	// A client as slow as a poor connection: past the server's first 8 KB (read before any
	// handler runs), the rest over 33 seconds.
	b := body.Bytes()
	if _, err := conn.Write(b[:10<<10]); err != nil {
		t.Fatal(err)
	}
	b = b[10<<10:]
	chunk := (len(b) + 32) / 33
	for len(b) > 0 {
		k := min(chunk, len(b))
		if _, err := conn.Write(b[:k]); err != nil {
			t.Fatalf("the node stopped reading the upload with %d of %d bytes to go: %v", len(b), body.Len(), err)
		}
		b = b[k:]
		time.Sleep(time.Second)
	}
	answer, _ := io.ReadAll(conn)
	if !bytes.HasPrefix(answer, []byte("HTTP/1.1 200")) || !bytes.Contains(answer, []byte(`"imported":1000`)) {
		t.Errorf("a 33-second upload = %.600s; want 200 with 1000 imported", answer)
	}
}

// The same file imported twice at once (a double click, a client's retry) is imported once
// and skipped once, never a 500: the second import could look for phones before all of the
// first's rows were visible, and meet them in the unique key.
func TestTheSameImportTwiceAtOnce(t *testing.T) {
	n := startNode(t, map[string]string{"TUMA_IMPORT_WORKERS": "4"})
	var csv bytes.Buffer
	csv.WriteString("phone,first_name\n")
	for i := range 3000 {
		fmt.Fprintf(&csv, "0712%06d,Ann\n", i)
	}
	for k := range 8 {
		a := n.register(fmt.Sprintf("twice-%d@example.com", k))
		answers := make([]response, 2)
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() { answers[i] = n.importCSV(a, csv.Bytes(), "", "") })
		}
		wg.Wait()
		imported, skipped := 0.0, 0.0
		for _, r := range answers {
			if r.Status != 200 {
				t.Fatalf("account %d: an import = %d %s; want 200", k, r.Status, r.Body)
			}
			imported += r.json(t)["imported"].(float64)
			skipped += r.json(t)["skipped"].(float64)
		}
		if imported != 3000 || skipped != 3000 {
			t.Errorf("account %d: %v imported and %v skipped between the two; want 3000 and 3000", k, imported, skipped)
		}
	}
}
