package platforms

import "errors"

// ErrNoCredential is wrapped, beside ErrUnauthenticated, by a Verify error
// for a delivery that carries no signature or token at all: the hook in
// the tracker has no secret set, which the receiver tells apart from a
// secret that does not match (pkg/webhooksig.ErrMismatch).
var ErrNoCredential = errors.New("no signature or token")
