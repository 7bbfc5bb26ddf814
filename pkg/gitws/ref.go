package gitws

import (
	"errors"
	"fmt"
	"strings"
)

// TicketPlaceholder is replaced by the ticket's id in a branch template
// ("agent-smith/{ticket}"); "{ticketId}" is accepted as the spec spells it.
const (
	TicketPlaceholder   = "{ticket}"
	ticketIDPlaceholder = "{ticketId}"
)

// maxBranchLen bounds a branch name: ticket ids are hostile input, and
// hosting services refuse refs far shorter than git's own limits.
const maxBranchLen = 200

// BranchName is template with the ticket id in place of {ticket}. The id is
// hostile input: every byte outside [A-Za-z0-9._-] becomes "-" (so
// "owner/repo#12" is "owner-repo-12", and no id can add a path component,
// a "..", an "@{" or a space), then the whole name must pass CheckRefFormat.
func BranchName(template, ticketID string) (string, error) {
	id := sanitize(ticketID)
	name := strings.ReplaceAll(strings.ReplaceAll(template, ticketIDPlaceholder, id), TicketPlaceholder, id)
	if err := CheckRefFormat(name); err != nil {
		return "", fmt.Errorf("branch for ticket %q: %w", truncate(ticketID, 80), err)
	}
	return name, nil
}

func sanitize(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	s := strings.Trim(string(b), ".-")
	for strings.Contains(s, "..") {
		s = strings.ReplaceAll(s, "..", ".")
	}
	s = strings.TrimSuffix(s, ".lock")
	if s == "" {
		return "ticket"
	}
	return truncate(s, 120)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

var errRef = errors.New("not a valid branch name")

// CheckRefFormat applies git check-ref-format's rules (git help
// check-ref-format) to a branch name as `git check-ref-format --branch`
// would, without running git: no component starts with "." or ends with
// ".lock"; no "..", no "@{", no control character, space, "~", "^", ":",
// "?", "*", "[" or "\"; no leading "-" or "/", no trailing "/" or ".", no
// "//"; not "@". It is stricter in one way: the name must be at most
// maxBranchLen bytes.
func CheckRefFormat(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w: %q: %s", errRef, truncate(name, 80), why) }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > maxBranchLen:
		return bad(fmt.Sprintf("longer than %d bytes", maxBranchLen))
	case name == "@":
		return bad(`is "@"`)
	case strings.HasPrefix(name, "-"):
		return bad(`starts with "-"`)
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/"):
		return bad(`starts or ends with "/"`)
	case strings.HasSuffix(name, "."):
		return bad(`ends with "."`)
	case strings.Contains(name, "//"):
		return bad(`contains "//"`)
	case strings.Contains(name, ".."):
		return bad(`contains ".."`)
	case strings.Contains(name, "@{"):
		return bad(`contains "@{"`)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return bad(fmt.Sprintf("contains %q", c))
		}
	}
	for _, comp := range strings.Split(name, "/") {
		if strings.HasPrefix(comp, ".") {
			return bad(`a component starts with "."`)
		}
		if strings.HasSuffix(comp, ".lock") {
			return bad(`a component ends with ".lock"`)
		}
	}
	return nil
}
