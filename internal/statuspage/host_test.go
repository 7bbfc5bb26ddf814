package statuspage

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAllowHostsRefusesOtherNames(t *testing.T) {
	h := AllowHosts([]string{"Agentsmithd-A"}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "x"})
	}))
	for host, want := range map[string]int{
		"localhost": 200, "localhost:9090": 200, "LOCALHOST:9090": 200, "127.0.0.1:9090": 200, "127.0.0.1": 200,
		"[::1]:9090": 200, "[::1]": 200, "10.1.2.3:9091": 200, "agentsmithd-a:9091": 200, "agentsmithd-a": 200,
		"rebind.attacker.example": 421, "rebind.attacker.example:9090": 421, "localhost.attacker.example:9090": 421,
		"127.0.0.1.nip.io:9090": 421, "agentsmithd-b:9091": 421, "": 421, "localhost.:9090": 421, "[fe80::1%25lo]:9090": 421,
	} {
		req := httptest.NewRequest(http.MethodGet, "/status", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %q: %d, want %d", host, rec.Code, want)
		}
		if want != 200 && len(rec.Result().Cookies()) != 0 {
			t.Errorf("Host %q: a cookie was set", host)
		}
	}
}
