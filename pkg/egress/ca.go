package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"sync"
	"time"
)

// CA lifetimes and cache size.
const (
	// DefaultCAValidity is how long a CA from NewCA is valid. It is short
	// because the sandbox trusts it for everything: a leaked key is worth
	// little after a week. The daemon makes one per run, or replaces it
	// before then.
	DefaultCAValidity = 7 * 24 * time.Hour
	// leafValidity is a leaf's lifetime (capped by the CA's); a cached
	// leaf within leafRenew of its end is issued again.
	leafValidity = 24 * time.Hour
	leafRenew    = time.Hour
	// DefaultLeafCache bounds the leaf certificates a CA keeps, so a
	// pipeline naming endless hosts cannot grow the daemon's memory
	// (only allowed hosts are intercepted, but wildcards are endless).
	DefaultLeafCache = 1024
	// clockSkew backdates certificates so a sandbox clock a little
	// behind the daemon's accepts them.
	clockSkew = 5 * time.Minute
)

// CA is an in-memory ECDSA P-256 certificate authority for interception:
// the sandbox trusts CertPEM, and the proxy presents a leaf for each
// intercepted host, issued on demand and cached. The key never leaves
// the process.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte

	mu    sync.Mutex
	leaf  map[string]*tls.Certificate
	order []string // insertion order, for eviction
}

// NewCA makes an ephemeral CA valid for DefaultCAValidity. It may only
// sign leaves (path length 0).
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress: CA key: %w", err)
	}
	serial, err := randSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "agentsmithd egress CA " + serial.Text(16)[:8], Organization: []string{"agentsmithd"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(DefaultCAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("egress: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress: CA certificate: %w", err)
	}
	return &CA{
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaf:    map[string]*tls.Certificate{},
	}, nil
}

// CertPEM is the CA certificate in PEM, what the sandbox trusts
// (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO).
// The caller owns the returned slice.
func (c *CA) CertPEM() []byte { return append([]byte(nil), c.certPEM...) }

// Certificate is the parsed CA certificate.
func (c *CA) Certificate() *x509.Certificate { return c.cert }

// leafFor returns a certificate for host (a normalized name or IP
// literal), from the cache when it is not near its end.
func (c *CA) leafFor(host string) (*tls.Certificate, error) {
	now := time.Now()
	c.mu.Lock()
	if l, ok := c.leaf[host]; ok && now.Add(leafRenew).Before(l.Leaf.NotAfter) {
		c.mu.Unlock()
		return l, nil
	}
	c.mu.Unlock()
	if !now.Before(c.cert.NotAfter) {
		return nil, errors.New("egress: the interception CA has expired")
	}
	l, err := c.issue(host, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.leaf[host]; !ok {
		c.order = append(c.order, host)
	}
	c.leaf[host] = l
	for len(c.order) > DefaultLeafCache {
		delete(c.leaf, c.order[0])
		c.order = c.order[1:]
	}
	return l, nil
}

// issue signs a leaf for host, valid leafValidity or until the CA ends.
func (c *CA) issue(host string, now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress: leaf key: %w", err)
	}
	serial, err := randSerial()
	if err != nil {
		return nil, err
	}
	end := now.Add(leafValidity)
	if end.After(c.cert.NotAfter) {
		end = c.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     end,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = append(tmpl.IPAddresses, a.AsSlice())
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, fmt.Errorf("egress: leaf certificate for %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress: leaf certificate for %s: %w", host, err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, c.cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// randSerial is a random 127-bit serial number (positive, RFC 5280 §4.1.2.2).
func randSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("egress: serial: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}
