package azuredevops

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/microsoft/azure-devops-go-api/azuredevops/v7"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// Two refusals of a tag write that the HTTP status does not explain, each
// given its own fix (platforms.WithFix) for the ticket's refusal comment:
//
//   - TF401289 (403 AccessCheckException): the write names a tag the
//     project does not define and the identity may not create tags, being
//     a Stakeholder in a private project or lacking "Create tag
//     definition" (MicrosoftDocs/azure-devops-docs
//     prerequisites-work-items.md; body in hkarthik7/azure-devops-java-sdk#105).
//   - TF401320 (400 RuleValidationException): the work item breaks a rule
//     on another field, and every save validates the whole work item, so
//     even a tags-only write is refused until that field is fixed
//     (bluebasher/WorkItemUpdater#48; the rule errors are listed in the
//     body's customProperties, snuziale/vsts-extension-split-work#25).

// TagsFix is what makes the lifecycle tags writable for an identity that
// may not create tags; `agentsmithd check` gives the same fix.
const TagsFix = "pre-create the tags: add them to one work item of the project as a user with Basic access " +
	"and leave them there (close that work item; Azure DevOps deletes a tag no work item carries for 3 days), " +
	"or give the daemon's identity Basic access and the project permission \"Create tag definition\""

// fieldName keeps what a field reference name may hold, nothing that
// renders as markup.
var fieldName = regexp.MustCompile(`^[A-Za-z0-9_.\- ]{1,128}$`)

// tf401320Field is the field a TF401320 message names.
var tf401320Field = regexp.MustCompile(`TF401320: Rule Error for field ([^.]{1,128})\.`)

// explainRefusal attaches the fix of a TF401289 or TF401320 refusal of a
// write that adds tags; other errors are returned as they are.
func explainRefusal(err error, tags ...string) error {
	var we *azuredevops.WrappedError
	var v azuredevops.WrappedError
	switch {
	case errors.As(err, &we) && we != nil:
	case errors.As(err, &v):
		we = &v
	default:
		return err
	}
	msg := ""
	if we.Message != nil {
		msg = *we.Message
	}
	switch {
	case strings.Contains(msg, "TF401289"):
		return platforms.WithFix(err, fmt.Sprintf("the daemon's Azure DevOps identity may not create tags "+
			"(Stakeholder access, or \"Create tag definition\" not allowed), and the project does not define %s yet: %s.", quoted(tags), TagsFix))
	case strings.Contains(msg, "TF401320"):
		fields := ruleFields(we, msg)
		return platforms.WithFix(err, fmt.Sprintf("this work item breaks a rule of its type on %s, and Azure DevOps "+
			"checks every rule on every save, so it refuses even the daemon's tag change: set that field on the work item "+
			"(or change the rule), then change the ticket's tags to have it tried again.", fields))
	}
	return err
}

// ruleFields names the fields a TF401320 refusal lists in its rule errors
// (reference names), else the one its message names.
func ruleFields(we *azuredevops.WrappedError, msg string) string {
	var names []string
	if we.CustomProperties != nil {
		list, _ := (*we.CustomProperties)["RuleValidationErrors"].([]any)
		for _, e := range list {
			m, _ := e.(map[string]any)
			if name, _ := m["fieldReferenceName"].(string); fieldName.MatchString(name) && len(names) < 5 {
				names = append(names, "`"+name+"`")
			}
		}
	}
	if len(names) == 0 {
		if m := tf401320Field.FindStringSubmatch(msg); m != nil && fieldName.MatchString(m[1]) {
			names = append(names, "`"+m[1]+"`")
		}
	}
	if len(names) == 0 {
		return "another field"
	}
	if len(names) == 1 {
		return "field " + names[0]
	}
	return "fields " + strings.Join(names, ", ")
}

// quoted is tags quoted and joined with " or ", each as %q spells it.
func quoted(tags []string) string {
	q := make([]string, len(tags))
	for i, t := range tags {
		q[i] = strconv.Quote(t)
	}
	return strings.Join(q, " or ")
}
