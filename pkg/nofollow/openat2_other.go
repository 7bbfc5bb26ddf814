//go:build unix && !linux

package nofollow

// openat2 is Linux's; elsewhere every open walks the components.
func openat2(int, string, int, uint32) (int, error) { return -1, errNoOpenat2 }
