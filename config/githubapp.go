package config

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
)

func (a *GitHubApp) validate(errs *Errors, path string) {
	if a.AppID <= 0 {
		errs.add(path+".app_id", "required: the App ID from the app's settings page")
	}
	if a.InstallationID <= 0 {
		errs.add(path+".installation_id", "required: the installation's id (the number in its settings URL)")
	}
	oneOf(&a.PrivateKey, path+".private_key", errs, a.PrivateKey, a.privateKeyEnv, a.privateKeyFile)
	if !a.PrivateKey.IsSet() && !errs.has(path+".private_key") {
		errs.add(path+".private_key", "required: private_key_file (the .pem GitHub generated) or private_key_env")
	}
}

// checkRSAKey reports a resolved private key that is not a PEM RSA key
// (PKCS#1, as GitHub generates, or PKCS#8), without quoting it.
func checkRSAKey(errs *Errors, path string, s Secret) {
	v := s.Value()
	if v == "" {
		return // unresolved: already reported
	}
	block, _ := pem.Decode([]byte(v))
	if block == nil {
		errs.add(path, "not a PEM-encoded private key")
		return
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if _, ok := k.(*rsa.PrivateKey); ok {
			return
		}
	}
	errs.add(path, "not an RSA private key (GitHub App keys are RSA)")
}
