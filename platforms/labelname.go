package platforms

import "strings"

// Whether two label names are the same label is the platform's to say, and
// these functions are the one place that says it; every comparison of label
// names in the daemon goes through them (TestLabelComparisonsHaveOneOwner).
//
//   - GitHub: case-insensitive. A repository cannot hold "bug" and "Bug":
//     creating "blocked" next to "Blocked" answers 422 (hackebrot/labels#15),
//     the GraphQL API answers "Name has already been taken"
//     (git-bug/git-bug#176), and adding a label in another case attaches the
//     repository's label in its own spelling ("adding the label is case
//     insensitive", rust-lang/triagebot#2214; "GitHub is case-insensitive for
//     labels", rust-lang/triagebot#1721).
//   - Azure DevOps: case-insensitive. A project has one tag catalogue and
//     keeps the spelling a tag was first used in; a write in another case
//     does not change it (MicrosoftDocs/azure-devops-docs#5055).
//   - GitLab: case-sensitive. "FIxMe" and "FixMe" are two labels since
//     gitlabhq/gitlabhq#4795 ("labels are now case-sensitive").
//   - Jira: case-sensitive. "Jira creates separate labels for the entries
//     Catalog and catalog" (community.atlassian.com, "JIRA Label
//     convention"); only JQL's search matches them loosely.
//
// An unknown platform compares exactly: a looser match could take a user's
// label for the daemon's.

// LabelCaseInsensitive reports whether platform treats label names that
// differ only in case as one label.
func LabelCaseInsensitive(platform string) bool {
	switch platform {
	case "github", "azuredevops":
		return true
	}
	return false
}

// SameLabel reports whether a and b name the same label on platform.
func SameLabel(platform, a, b string) bool {
	if LabelCaseInsensitive(platform) {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// ContainsLabel reports whether labels holds label, as platform compares.
func ContainsLabel(platform string, labels []string, label string) bool {
	for _, l := range labels {
		if SameLabel(platform, l, label) {
			return true
		}
	}
	return false
}

// Respell rewrites in place each label that is, on platform, one of
// spellings but spelled otherwise to that spelling, and returns labels.
// spellings are the labels the daemon writes and reads (its lifecycle
// labels and the trigger label) as configured; a tracker respells what it
// reads so the lifecycle sees its own labels as it spells them, whatever
// case the repository or project keeps them in. Other labels stay byte for
// byte. On a case-sensitive platform nothing changes.
func Respell(platform string, labels, spellings []string) []string {
	if !LabelCaseInsensitive(platform) {
		return labels
	}
	for i, l := range labels {
		for _, sp := range spellings {
			if l != sp && SameLabel(platform, l, sp) {
				labels[i] = sp
				break
			}
		}
	}
	return labels
}

// OtherSpelling returns the entry of labels that is label on platform but
// spelled otherwise ("Agent-Smith:Done" for "agent-smith:done" on GitHub),
// and whether there is one.
func OtherSpelling(platform string, labels []string, label string) (string, bool) {
	for _, l := range labels {
		if l != label && SameLabel(platform, l, label) {
			return l, true
		}
	}
	return "", false
}

// HasLabelPrefix reports whether label begins with prefix, as platform
// compares label names: "Agent-Smith:Done" is under "agent-smith:" on
// GitHub.
func HasLabelPrefix(platform, label, prefix string) bool {
	return len(label) >= len(prefix) && SameLabel(platform, label[:len(prefix)], prefix)
}

// RespellTicket reads the labels of the event's ticket, if any, in
// spellings (Respell): a webhook decoder's answer in the daemon's spelling,
// as its platform's tracker reads labels.
func (e *WebhookEvent) RespellTicket(spellings []string) {
	if e.Ticket != nil {
		e.Ticket.Labels = Respell(e.Ticket.Ref.Platform, e.Ticket.Labels, spellings)
	}
}

// LabelSet is labels without "" entries and without repeats, as platform
// compares label names, in their first order: the adds of one Relabel.
func LabelSet(platform string, labels []string) []string {
	var out []string
	for _, l := range labels {
		if l != "" && !ContainsLabel(platform, out, l) {
			out = append(out, l)
		}
	}
	return out
}
