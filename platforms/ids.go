package platforms

import (
	"fmt"
	"strconv"
	"strings"
)

// NumberedID is the shape every tracker's ticket id has here: the project's
// locator, a separator and a positive number ("owner/repo#12", "PROJ-12").
// Each platform declares its own and gets formatting, parsing and the check
// that a ref belongs to the tracker's project from one implementation.
type NumberedID struct {
	Platform string
	Sep      byte
	// Want describes the form for error messages ("owner/repo#number").
	Want string
	// CheckLocator validates the locator part; nil accepts any non-empty one.
	CheckLocator func(string) error
}

// Format joins locator and n.
func (f NumberedID) Format(locator string, n int) string {
	return locator + string(f.Sep) + strconv.Itoa(n)
}

// Parse splits id at its last separator. The number must be plain decimal
// digits and positive.
func (f NumberedID) Parse(id string) (locator string, n int, err error) {
	i := strings.LastIndexByte(id, f.Sep)
	if i <= 0 || (f.CheckLocator != nil && f.CheckLocator(id[:i]) != nil) {
		return "", 0, fmt.Errorf("%s: ticket id %q: want %s", f.Platform, id, f.Want)
	}
	digits := id[i+1:]
	n, err = strconv.Atoi(digits)
	if err != nil || n <= 0 || strings.TrimLeft(digits, "0123456789") != "" {
		return "", 0, fmt.Errorf("%s: ticket id %q: bad number", f.Platform, id)
	}
	return id[:i], n, nil
}

// Resolve returns ref's number if ref is a ticket of this platform under
// locator (compared case-insensitively: every platform here treats project
// paths and keys so). A ref of another project is refused, since the
// tracker's token and project belong to its own.
func (f NumberedID) Resolve(ref Ref, locator string) (int, error) {
	if ref.Platform != f.Platform {
		return 0, fmt.Errorf("%s: ref %s is not a %s ticket", f.Platform, ref, f.Platform)
	}
	loc, n, err := f.Parse(ref.ID)
	if err != nil {
		return 0, err
	}
	if !strings.EqualFold(loc, locator) {
		return 0, fmt.Errorf("%s: ref %s belongs to %s, tracker is bound to %s", f.Platform, ref, loc, locator)
	}
	return n, nil
}
