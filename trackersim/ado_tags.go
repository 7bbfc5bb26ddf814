package trackersim

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// How Azure DevOps applies the JSON Patch operations of Work Items - Update
// to System.Tags, as the service does it rather than as RFC 6902 reads:
//
//   - "add" MERGES the given tags into the work item's tags; it never
//     removes one. Users who sent the whole wanted list with "add" found the
//     tags they meant to drop still there (bluebasher/WorkItemUpdater#87,
//     #92), and Microsoft's own CLI adds a tag with "add" of that one tag and
//     removes one with "replace" of the rest (Azure/azure-devops-cli-extension,
//     azext_devops/dev/boards/work_item_tags.py). An "add" of "" therefore
//     changes nothing: #92's log shows exactly that patch leaving the tag in
//     place. (ashamrai/TFRestApi#4 answers that writing "" clears the tags,
//     without saying which operation and without the asker confirming; the
//     logged observation wins.)
//   - "replace" sets the whole list; "replace" with "" clears it
//     (Tiberriver256/mcp-server-azure-devops#301, whose integration test
//     against the service overwrites and clears tags this way).
//   - "replace" of a work item that has no tags fails: #301 falls back to
//     "add" for that case because "'replace' fails on a missing/empty
//     field", as RFC 6902 §4.3 requires ("the target location MUST exist").
//     The status and text of that failure are not on record; the sim answers
//     400 PatchOperationFailedException, the status the work item API maps
//     patch failures to.
//   - "remove" clears the tags. No report covers "remove" on System.Tags;
//     the sim applies RFC 6902 §4.2 (the field must exist, like "replace").
//   - Tags are case-insensitive: a project keeps one spelling per tag, and a
//     write of another spelling does not change it (MicrosoftDocs/
//     azure-devops-docs#5055: "I cannot change a mis-cased tag to the
//     correct case"). The sim keeps the spelling already on the work item,
//     else the one of the project's tag catalogue (ado_rights.go).
//   - Values are split at ';' with the blanks around each tag dropped and
//     written back joined by "; " (the form every answer of the service
//     shows, e.g. #301's "A; B"); the answer to the PATCH carries the new
//     System.Tags.

// adoTagOp is one operation on System.Tags, in document order.
type adoTagOp struct {
	op    string // add, replace or remove
	value string
}

// adoApplyTagOps applies ops to the work item's tags in order. It returns
// the new list, or the error message of a 400 for an operation the service
// refuses.
func adoApplyTagOps(cur []string, ops []adoTagOp) ([]string, string) {
	tags := slices.Clone(cur)
	for _, o := range ops {
		switch o.op {
		case "add":
			tags = adoMergeTags(tags, adoSplitTags(o.value))
		case "replace", "remove":
			if len(tags) == 0 {
				return nil, fmt.Sprintf("The operation %q on path \"/fields/System.Tags\" failed: the work item has no value for the field.", o.op)
			}
			tags = []string{}
			if o.op == "replace" {
				tags = adoSplitTags(o.value)
			}
		}
	}
	return tags, ""
}

// adoMergeTags is tags plus every tag of more that no tag of tags spells
// case-insensitively; the spellings already there are kept.
func adoMergeTags(tags, more []string) []string {
	out := slices.Clone(tags)
	for _, m := range more {
		if !slices.ContainsFunc(out, func(t string) bool { return strings.EqualFold(t, m) }) {
			out = append(out, m)
		}
	}
	return out
}

// adoKeepSpelling rewrites each tag of next to the spelling cur has for it,
// so a write in another case does not rename a tag (see above).
func adoKeepSpelling(cur, next []string) []string {
	out := make([]string, len(next))
	for i, n := range next {
		out[i] = n
		if j := slices.IndexFunc(cur, func(c string) bool { return strings.EqualFold(c, n) }); j >= 0 {
			out[i] = cur[j]
		}
	}
	return out
}

// adoSplitTags parses System.Tags ("a; b"). Of two spellings of one tag the
// first is kept.
func adoSplitTags(s string) []string {
	out := []string{}
	for _, t := range strings.Split(s, ";") {
		t = strings.TrimSpace(t)
		if t != "" && !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, t) }) {
			out = append(out, t)
		}
	}
	return out
}

// adoTestFailed answers a "test /rev" that does not match: 412 with the
// body the service sends. The work item API maps
// TestPatchOperationFailedException to 412 Precondition Failed (observed
// live: microsoft/azure-devops-mcp#1526, "HTTP 412 Precondition Failed" for
// a stale revision), and clients that met it on the service record the text
// "VS403351: Test Operation for path /rev failed, value <current> was not
// equal to test value <sent>." Nothing of the document is applied.
func adoTestFailed(w http.ResponseWriter, current, sent int) {
	writeJSON(w, http.StatusPreconditionFailed, adoErrorBody{ID: "1", EventID: 3000,
		Message:  fmt.Sprintf("VS403351: Test Operation for path /rev failed, value %d was not equal to test value %d.", current, sent),
		TypeKey:  "TestPatchOperationFailedException",
		TypeName: "Microsoft.VisualStudio.Services.WebApi.Patch.TestPatchOperationFailedException, Microsoft.VisualStudio.Services.WebApi",
	})
}

// adoPatchFailed answers an operation the service refuses to apply: 400
// PatchOperationFailedException.
func adoPatchFailed(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, adoErrorBody{ID: "1", EventID: 3000, Message: msg,
		TypeKey:  "PatchOperationFailedException",
		TypeName: "Microsoft.VisualStudio.Services.WebApi.Patch.PatchOperationFailedException, Microsoft.VisualStudio.Services.WebApi",
	})
}
