package trackersim

import "net/http"

// testClient is the HTTP client of this package's tests. Its transport is
// its own: httptest.Server.Close closes http.DefaultTransport's idle
// connections, which breaks a request another parallel test is making on
// it ("CloseIdleConnections called").
var testClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
