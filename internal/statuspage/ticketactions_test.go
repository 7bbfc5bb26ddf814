package statuspage

import (
	"slices"
	"strings"
	"testing"
)

// Each ticket is offered only the actions that can change it.
func TestTicketActionsFitTheState(t *testing.T) {
	for _, tc := range []struct {
		state string
		live  bool
		want  []string
	}{
		{"done", false, nil},
		{"pending", false, nil},
		{"", false, nil},
		{"failed", false, []string{"retry"}},
		{"enqueued", false, []string{"requeue", "cancel"}},
		{"enqueued", true, []string{"cancel"}},
		{"in-progress", false, []string{"cancel"}},
		{"", true, []string{"cancel"}},
		{"awaiting-approval", false, []string{"approve", "reject", "cancel"}},
	} {
		if got := ticketActions(tc.state, tc.live, true, true, true); !slices.Equal(got, tc.want) {
			t.Errorf("state %q live %v: %v, want %v", tc.state, tc.live, got, tc.want)
		}
	}
	if got := ticketActions("failed", false, false, false, false); got != nil {
		t.Errorf("without a claim service a failed ticket is offered %v", got)
	}
	if got := ticketActions("awaiting-approval", false, true, true, false); got != nil {
		t.Errorf("without the gate a parked ticket is offered %v", got)
	}
}

// The page renders a row's buttons from its actions: a queued ticket of
// unknown state gets cancel and nothing else.
func TestPageOffersOnlyTheTicketsActions(t *testing.T) {
	var b strings.Builder
	v := pageView{CSRF: "c", Tickets: []ticketRow{{Ref: refFor("acme/app#1"), State: "done"}, {Ref: refFor("acme/app#2"), Where: "queued",
		Actions: []string{"cancel"}}}}
	if err := pages.ExecuteTemplate(&b, "page", v); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{`data-target="github:acme/app#1"`, `data-action="retry"`, `data-action="requeue"`} {
		if strings.Contains(page, bad) {
			t.Errorf("page offers %s", bad)
		}
	}
	if !strings.Contains(page, `data-action="cancel" data-target="github:acme/app#2"`) {
		t.Error("page lacks cancel of the queued ticket")
	}
}
