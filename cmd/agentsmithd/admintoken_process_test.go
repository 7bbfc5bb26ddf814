package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
)

// loggedAdminAddr is the admin address the daemon logged in logPath
// ("listening" with admin_addr), "" before it did.
func loggedAdminAddr(logPath string) string {
	b, _ := os.ReadFile(logPath)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var l struct {
			AdminAddr string `json:"admin_addr"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.AdminAddr != "" {
			return l.AdminAddr
		}
	}
	return ""
}

// The README walkthrough's config names no status.token: serve creates one
// on its first start, 0600 beside the config, names the file (never the
// token) in its log, and its admin listener answers only with it; the next
// start keeps it.
func TestServeCreatesTheAdminTokenFile(t *testing.T) {
	w := newProcWorld(t, simcases.GitHub)
	tokenPath := filepath.Join(w.dir, "replica-a.status-token")
	logPath := filepath.Join(w.dir, "replica-a.log")
	var token string
	for start := 1; start <= 2; start++ {
		cmd := w.start("replica-a", "")
		var admin string
		eventually.Wait(t, 30*time.Second, "the daemon to listen", func() bool { admin = loggedAdminAddr(logPath); return admin != "" })
		fi, err := os.Stat(tokenPath)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("start %d: token file %v, %v; want 0600", start, fi, err)
		}
		b, _ := os.ReadFile(tokenPath)
		got := string(bytes.TrimSpace(b))
		if start == 2 && got != token {
			t.Errorf("the second start replaced the token")
		}
		token = got
		log, _ := os.ReadFile(logPath)
		if bytes.Contains(log, []byte(token)) {
			t.Errorf("start %d: the token is in the log", start)
		}
		if start == 1 && !bytes.Contains(log, []byte(tokenPath)) {
			t.Errorf("the first start's log does not name %s:\n%s", tokenPath, log)
		}
		for auth, want := range map[string]int{"": 401, "Bearer wrong": 401, "Bearer " + token: 200} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+admin+"/status.json", nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("start %d: GET /status.json with %q = %d, want %d", start, auth, resp.StatusCode, want)
			}
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_, _ = cmd.Process.Wait()
	}
}
