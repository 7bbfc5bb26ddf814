package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// A GitHub transition is two writes: the owner adds done (the state is
// Done from then on), and when the owner dies before removing in-progress,
// housekeeping's LabelRepairer on another replica removes it. That tidying
// changes no state and is no stale write; another replica adding done to a
// run it does not own still is.
func TestStaleWritesReadStatesLikeTheDaemon(t *testing.T) {
	at := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	split := func(ls []string) (before, after []string) {
		for i, l := range ls {
			if l == "|" {
				return ls[:i], ls[i+1:]
			}
		}
		return ls, nil
	}
	mk := func(sec int, writer string, ls ...string) trackersim.Write {
		b, a := split(ls)
		return trackersim.Write{At: at.Add(time.Duration(sec) * time.Second), Repo: "acme/app", Number: 1, Writer: writer,
			Before: labels(b), After: labels(a)}
	}
	repaired := []trackersim.Write{
		mk(1, "r1.1", "enqueued", "|", "enqueued", "in-progress"),
		mk(2, "r1.1", "enqueued", "in-progress", "|", "in-progress"),
		mk(3, "r1.1", "in-progress", "|", "in-progress", "done"),
		mk(9, "r2.1", "in-progress", "done", "|", "done"), // the LabelRepairer
	}
	if got := staleWrites(repaired, nil, nil); len(got) != 0 {
		t.Errorf("label repair after the owner's done counted as stale: %q", got)
	}
	foreign := []trackersim.Write{
		mk(1, "r1.1", "enqueued", "|", "enqueued", "in-progress"),
		mk(3, "r2.1", "enqueued", "in-progress", "|", "enqueued", "in-progress", "done"),
	}
	if got := staleWrites(foreign, nil, nil); len(got) != 1 {
		t.Errorf("another replica ending r1.1's run: %q, want one stale write", got)
	}
	// r1.1 added in-progress, its removal of enqueued failed (a tracker
	// 5xx) and it gave the request back; r2.1 took the request, completed
	// the move and ran it (seen in a default chaos run: acme/app#41).
	handedBack := []trackersim.Write{
		mk(1, "r1.1", "|", "enqueued"),
		mk(2, "r1.1", "enqueued", "|", "enqueued", "in-progress"),
		mk(5, "r2.1", "enqueued", "in-progress", "|", "in-progress"),
		mk(6, "r2.1", "in-progress", "|", "in-progress", "done"),
		mk(7, "r2.1", "in-progress", "done", "|", "done"),
	}
	if got := staleWrites(handedBack, nil, nil); len(got) != 0 {
		t.Errorf("the replica that completed a handed-back start counted as stale: %q", got)
	}
}

// A run's outcome recorded when its pipeline ended and written by another
// replica (the OutcomeWriter, its owner cut from the tracker or killed) is
// no stale write; another replica ending the run while the owner's
// pipeline still works, or after a pipeline that never ended, still is.
func TestOutcomeWrittenFromTheRecordIsNoStaleWrite(t *testing.T) {
	at := time.Date(2026, 11, 23, 18, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return at.Add(time.Duration(s * float64(time.Second))) }
	w := func(s float64, writer string, before, after []string) trackersim.Write {
		return trackersim.Write{At: sec(s), Repo: "acme/app", Number: 1, Writer: writer, Before: labels(before), After: labels(after)}
	}
	ws := []trackersim.Write{
		w(1, "r1.1", []string{"enqueued"}, []string{"enqueued", "in-progress"}),
		w(1.1, "r1.1", []string{"enqueued", "in-progress"}, []string{"in-progress"}),
		w(40, "r2.1", []string{"in-progress"}, []string{"in-progress", "done"}),
	}
	events := []event{{At: at, Kind: "start", Inc: "r1.1", PID: 100}, {At: at, Kind: "start", Inc: "r2.1", PID: 200}}
	id := ticketID(trackersim.Issue{Repo: "acme/app", Number: 1})
	ended := []*run{{id: id, attempt: 1, inc: "r1.1", start: sec(1.2), end: sec(2), ended: sec(2)}}
	if got := staleWrites(ws, events, ended); len(got) != 0 {
		t.Errorf("the outcome of r1.1's ended run written by r2.1 counted as stale: %q", got)
	}
	working := []*run{{id: id, attempt: 1, inc: "r1.1", start: sec(1.2), end: sec(41)}}
	if got := staleWrites(ws, events, working); len(got) != 1 {
		t.Errorf("r2.1 ending r1.1's run while its pipeline worked: %q, want one stale write", got)
	}
	late := []*run{{id: id, attempt: 1, inc: "r1.1", start: sec(1.2), end: sec(45), ended: sec(45)}}
	if got := staleWrites(ws, events, late); len(got) != 1 {
		t.Errorf("r2.1 ending r1.1's run before its pipeline ended: %q, want one stale write", got)
	}
}

// A write that names no started incarnation (the replicas sent no writer
// header) counts as stale: the analysis cannot clear it.
func TestUnnamedWritesCount(t *testing.T) {
	events := []event{{Kind: "start", Inc: "r1.1"}, {Kind: "kill", Inc: "r1.1"}}
	ws := []trackersim.Write{{Writer: "human"}, {Writer: "r1.1"}, {Writer: "go-github/v74"}}
	if got := unnamedWrites(ws, events); len(got) != 1 || !strings.Contains(got[0], "go-github/v74") {
		t.Errorf("unnamed writes %q, want the go-github one", got)
	}
}

// labels are the lifecycle labels of the named states.
func labels(states []string) []string {
	out := make([]string, len(states))
	for i, name := range states {
		s, err := lifecycle.ParseState(name)
		if err != nil {
			panic(err)
		}
		out[i] = daemonLabels.Label(s)
	}
	return out
}

// The owner of a staged GitHub ticket dies halfway through its move to the
// next stage (enqueued added, in-progress not yet removed); the
// StaleJobDetector of another replica reverts it to pending, label by
// label, and the middle of that revert reads enqueued. That is the revert,
// not another replica ending the run (the chaos run with -stages:
// stagedorg/app#3, r1.3 killed after its stage ended, r2.4 reverting).
// Another replica moving the run to enqueued without pending still is.
func TestStaleWritesRevertOverAHalfDoneStageMove(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 15, 57, 0, time.UTC)
	mk := func(ms int, writer string, before, after []string) trackersim.Write {
		return trackersim.Write{At: at.Add(time.Duration(ms) * time.Millisecond), Repo: "stagedorg/app", Number: 3, Writer: writer,
			Before: labels(before), After: labels(after)}
	}
	ip, enq, pend := "in-progress", "enqueued", "pending"
	start := []trackersim.Write{
		mk(0, "r1.3", []string{enq}, []string{enq, ip}),
		mk(100, "r1.3", []string{enq, ip}, []string{ip}),
		mk(1200, "r1.3", []string{ip}, []string{ip, enq}), // the stage move's first half; r1.3 dies
	}
	revert := append(slices.Clone(start),
		mk(4300, "r2.4", []string{ip, enq}, []string{ip, enq, pend}),
		mk(4400, "r2.4", []string{ip, enq, pend}, []string{enq, pend}),
		mk(4450, "r2.4", []string{enq, pend}, []string{pend}),
		mk(4500, "r2.4", []string{pend}, []string{pend, enq}),
		mk(4550, "r2.4", []string{pend, enq}, []string{enq}),
	)
	if got := staleWrites(revert, nil, nil); len(got) != 0 {
		t.Errorf("a revert over a half-done stage move counted as stale: %q", got)
	}
	foreign := append(slices.Clone(start), mk(4400, "r2.4", []string{ip, enq}, []string{enq}))
	if got := staleWrites(foreign, nil, nil); len(got) != 1 {
		t.Errorf("another replica finishing r1.3's stage move: %q, want one stale write", got)
	}
}
