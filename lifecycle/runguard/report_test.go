//go:build unix

package runguard_test

import (
	"net"
	"os"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle/runguard"
)

// The guard writes its report only to a pipe: a daemon older than the
// report pipe passes no fd 4, and whatever the guard itself opened there
// (a socket, a file) is never taken for it.
func TestReportFileIsAPipeOrNothing(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if runguard.ReportFile(w.Fd()) == nil {
		t.Error("a pipe was not taken for the report")
	}
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sock, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	for name, fd := range map[string]uintptr{"a file": f.Fd(), "a socket": sock.Fd(), "a closed fd": 1 << 20} {
		if runguard.ReportFile(fd) != nil {
			t.Errorf("%s was taken for the report", name)
		}
	}
}
