package azuredevops

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Azure DevOps keeps a work item's tags in one string field, System.Tags,
// written and returned as "a; b; c". A tag cannot contain ';'. Tags are
// case-insensitive: a project has one tag catalogue and "Bug" and "bug" are
// the same tag there (platforms.SameLabel, which every comparison here
// asks). The tracker reads the daemon's tags in its spelling
// (platforms.Respell), and a write removes every spelling of a tag it
// removes.

// tagSeparator joins tags the way Azure DevOps itself writes them.
const tagSeparator = "; "

// splitTags parses a System.Tags value, keeping each tag byte for byte
// apart from the blanks around the separators. It never returns nil, so a
// ticket without tags has an empty (not a missing) label list.
func splitTags(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ";") {
		if t = strings.Trim(t, " "); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// joinTags is splitTags' inverse.
func joinTags(tags []string) string { return strings.Join(tags, tagSeparator) }

// checkTag refuses a tag Azure DevOps cannot store as one tag.
func checkTag(tag string) error {
	if strings.Contains(tag, ";") || strings.HasPrefix(tag, " ") || strings.HasSuffix(tag, " ") {
		return fmt.Errorf("azuredevops: tag %q: tags cannot contain ';' or start or end with a blank", tag)
	}
	return nil
}

// relabel is tags minus every spelling of the tags in remove, plus each of
// add, keeping the others byte for byte and in order. A tag that differs
// from one of add only in case is that tag to Azure DevOps: it is replaced
// in place by add's spelling instead of being duplicated. add holds no ""
// and no repeats (platforms.LabelSet).
func relabel(tags, remove, add []string) []string {
	out := make([]string, 0, len(tags)+len(add))
	var placed []string
	for _, t := range tags {
		if i := slices.IndexFunc(add, func(a string) bool { return platforms.SameLabel(Platform, t, a) }); i >= 0 {
			if !containsFold(placed, add[i]) {
				out = append(out, add[i])
				placed = append(placed, add[i])
			}
			continue
		}
		if containsFold(remove, t) {
			continue
		}
		out = append(out, t)
	}
	for _, a := range add {
		if !containsFold(placed, a) {
			out = append(out, a)
		}
	}
	return out
}

func containsFold(list []string, s string) bool { return platforms.ContainsLabel(Platform, list, s) }

// sameTags reports whether a and b hold the same tags, as Azure DevOps
// compares them: case-insensitively and regardless of order.
func sameTags(a, b []string) bool {
	for _, t := range a {
		if !containsFold(b, t) {
			return false
		}
	}
	for _, t := range b {
		if !containsFold(a, t) {
			return false
		}
	}
	return true
}

// respell rewrites each tag that equals one of spellings but for case to
// that spelling (see Options.Spellings); other tags stay byte for byte.
func respell(tags, spellings []string) []string { return platforms.Respell(Platform, tags, spellings) }
