package platforms

import "time"

// webhookTimeLayouts are the timestamp forms the four platforms' payloads
// use: RFC 3339 (GitHub, Azure DevOps with fractions, GitLab since 15.x)
// and GitLab's older "2013-12-03 17:23:34 UTC".
var webhookTimeLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05 MST", "2006-01-02 15:04:05 -0700"}

// ParseTime reads a payload timestamp; an empty or unknown form is the zero
// time (the receiver then does not judge the delivery's age).
func ParseTime(s string) time.Time {
	for _, l := range webhookTimeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t
		}
	}
	return time.Time{}
}
