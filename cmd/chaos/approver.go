package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// Approval gates (-gates implement, with -stages): the staged projects'
// gated stages wait for approval, and the approver, a person of the chaos
// world, decides every ticket it finds parked in AwaitingApproval. Per
// parking it approves, rejects (the ticket goes back to the stage before)
// or cancels racing its own approval (the approval and `/agent-smith
// cancel` posted back to back, in either order), by a comment command or a
// decision label (labels only on polling-only projects, whose comments
// the daemon never sees). A comment command is carried out after its
// delivery is answered, so a replica killed in between drops it, as the
// daemon documents ("its author can comment again"): the approver, as a
// person would, comments again when the ticket still waits reaskAfter
// later. A decision label is never added again: it stays on the ticket,
// and the daemon must read it. approvalKills kills the replica that took
// a decision's delivery, 0–approvalKillDelay after it answered, inside the
// decision's handling. The judge (judgeStages, Report.LostApprovals) fails
// a gated stage run without an approval after the stage before succeeded,
// a ticket still parked at the end whose parking was decided, and a
// ticket Failed right after a stage succeeded that no decision failed.

// reaskAfter is how long the approver waits for a comment decision to be
// carried out before it comments again: past a killed replica's restart
// (1 s), a claim lock the dead replica held (claim_lock_ttl 5 s) and a few
// tracker calls under injected latency and 429s.
const reaskAfter = 15 * time.Second

// approvalKillDelay bounds how long after a decision's delivery was
// answered approvalKills kills the replica that answered it: the gate's
// handling is a permission lookup, two reads, a label write, a push and a
// reply, each up to 300 ms of injected latency.
const approvalKillDelay = 500 * time.Millisecond

// decision is one decision the approver posted.
type decision struct {
	id, stage string
	kind      string // approve, reject, cancel
	via       string // comment, label
	at        time.Time
	reask     bool // a comment posted again for the same parking
}

// parking is the approver's view of one ticket's current parking.
type parking struct {
	stage    string
	seen     time.Time
	due      time.Time // when the approver decides
	decided  bool
	kinds    []string // what it decided: approve, reject, cancel (the race posts two)
	via      string
	lastAsk  time.Time
	parkings int // how many times this ticket was seen parked, this one included
}

// approver decides parked tickets; its state is read by the settle watch
// and the judge.
type approver struct {
	w   *world
	rnd func(int) int

	mu        sync.Mutex
	at        map[string]*parking // ticket id → its parking (nil: not parked)
	decisions []decision
	parkings  int
}

func newApprover(w *world, rnd func(int) int) *approver {
	return &approver{w: w, rnd: rnd, at: map[string]*parking{}}
}

// gatedProjects are the run's projects with an approval gate.
func gatedProjects() []project {
	var out []project
	for _, p := range projects {
		if len(p.gates) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// run decides parked tickets every poll until ctx ends.
func (a *approver) run(ctx context.Context, poll time.Duration) {
	for sleepCtx(ctx, poll) {
		a.step(time.Now())
	}
}

// step reads the tracker once and decides what is due.
func (a *approver) step(at time.Time) {
	byRepo := map[string]project{}
	for _, p := range gatedProjects() {
		byRepo[p.Repo] = p
	}
	for _, is := range a.w.sim.Issues() {
		p, ok := byRepo[is.Repo]
		if !ok {
			continue
		}
		id := p.ID(is.Number)
		parked := has(is.Labels, lifecycle.AwaitingApproval) && !has(is.Labels, lifecycle.Done) && !has(is.Labels, lifecycle.Failed)
		a.mu.Lock()
		cur := a.at[id]
		if !parked {
			if cur != nil {
				cur.stage = "" // the parking ended; the next is a new one
			}
			a.mu.Unlock()
			continue
		}
		now, was := lifecycle.Labels{Prefix: daemonLabels.Prefix, Stages: p.stages}.StageOf(is.Labels), ""
		if cur != nil {
			was = cur.stage
		}
		if was == "" || was != now {
			n := 1
			if cur != nil {
				n = cur.parkings + 1
			}
			cur = &parking{stage: now, seen: at, due: at.Add(time.Duration(a.rnd(1000)) * time.Millisecond), parkings: n}
			a.at[id] = cur
			a.parkings++
		}
		a.mu.Unlock()
		switch {
		case !cur.decided && !at.Before(cur.due):
			a.decide(p, is.Number, id, cur, at)
		case cur.decided && cur.via == "comment" && at.Sub(cur.lastAsk) > reaskAfter:
			a.reask(p, is.Number, id, cur, at)
		}
	}
}

// commandPrefix opens the chaos projects' comment commands.
const commandPrefix = config.DefaultCommandPrefix

// decide picks and posts one decision on ticket n of p: mostly an
// approval, sometimes a rejection, sometimes an approval racing a cancel.
func (a *approver) decide(p project, n int, id string, cur *parking, now time.Time) {
	via := "label"
	if p.webhook && a.rnd(2) == 0 {
		via = "comment"
	}
	var kinds []string
	switch k := a.rnd(100); {
	case k < 15:
		kinds = []string{"reject"}
	case k < 25 && p.webhook: // cancel is a comment command only
		kinds = []string{"approve", "cancel"}
		if a.rnd(2) == 0 {
			kinds = []string{"cancel", "approve"}
		}
	default:
		kinds = []string{"approve"}
	}
	a.mu.Lock()
	cur.decided, cur.kinds, cur.via, cur.lastAsk = true, kinds, via, now
	a.mu.Unlock()
	for _, kind := range kinds {
		how := via
		if kind == "cancel" {
			how = "comment"
		}
		a.post(p, n, id, cur.stage, kind, how, false)
	}
}

// reask posts a comment decision again: the ticket still waits
// reaskAfter after it.
func (a *approver) reask(p project, n int, id string, cur *parking, now time.Time) {
	a.mu.Lock()
	cur.lastAsk = now
	kinds := slices.Clone(cur.kinds)
	a.mu.Unlock()
	for _, kind := range kinds {
		if kind != "cancel" {
			a.post(p, n, id, cur.stage, kind, "comment", true)
		}
	}
}

// post writes one decision on the tracker as the human user.
func (a *approver) post(p project, n int, id, stage, kind, via string, reask bool) {
	var err error
	switch {
	case via == "label" && kind == "approve":
		err = a.w.sim.AddLabels(p.Repo, n, daemonLabels.Approved())
	case via == "label":
		err = a.w.sim.AddLabels(p.Repo, n, daemonLabels.Rejected())
	case kind == "reject":
		err = a.w.sim.AddComment(p.Repo, n, commandPrefix+" reject chaos review: try again")
	default:
		err = a.w.sim.AddComment(p.Repo, n, commandPrefix+" "+kind)
	}
	if err != nil {
		fmt.Fprintf(a.w.logw, "chaos: approver %s %s: %v\n", kind, id, err)
		return
	}
	a.mu.Lock()
	a.decisions = append(a.decisions, decision{id: id, stage: stage, kind: kind, via: via, at: time.Now(), reask: reask})
	a.mu.Unlock()
	a.w.logf("approver %s %s of %s by %s", kind, stage, id, via)
}

// waitsOnDecision reports whether the ticket id, showing labels ls, is
// parked: with the approver on, every parking is decided, so a parked
// ticket still waits on the approver or on the daemon carrying out its
// decision, and has not come to rest.
func (a *approver) waitsOnDecision(ls []string) bool {
	return a != nil && has(ls, lifecycle.AwaitingApproval) && !has(ls, lifecycle.Done) && !has(ls, lifecycle.Failed)
}

// ticketDecisions are one ticket's decisions, for the judge.
type ticketDecisions struct {
	approvals, rejections, cancels []time.Time
}

// byTicket groups the approver's decisions by ticket.
func (a *approver) byTicket() map[string]*ticketDecisions {
	out := map[string]*ticketDecisions{}
	if a == nil {
		return out
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, d := range a.decisions {
		td := out[d.id]
		if td == nil {
			td = &ticketDecisions{}
			out[d.id] = td
		}
		switch d.kind {
		case "approve":
			td.approvals = append(td.approvals, d.at)
		case "reject":
			td.rejections = append(td.rejections, d.at)
		case "cancel":
			td.cancels = append(td.cancels, d.at)
		}
	}
	return out
}

// approvalFigures are the approver's rows.
type approvalFigures struct {
	On                                   bool
	Parkings                             int
	Approvals, Rejections, Cancels       int // decisions posted, re-asks excluded
	ByComment, ByLabel, Reasks           int
	Kills                                int // approvalKills' kills
	ParkedAtEnd                          int
	LostApprovals                        []string // parked at the end with the parking decided
	FailedByDecision, RejectedPastMaxima int
}

// figures counts the approver's decisions; states are the tickets' labels
// at the end.
func (a *approver) figures(states map[string][]string) approvalFigures {
	if a == nil {
		return approvalFigures{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	f := approvalFigures{On: true, Parkings: a.parkings, Kills: a.w.approvalKillCount()}
	for _, d := range a.decisions {
		switch {
		case d.reask:
			f.Reasks++
			continue
		case d.kind == "approve":
			f.Approvals++
		case d.kind == "reject":
			f.Rejections++
		case d.kind == "cancel":
			f.Cancels++
		}
		if d.via == "comment" {
			f.ByComment++
		} else {
			f.ByLabel++
		}
	}
	ids := make([]string, 0, len(a.at))
	for id := range a.at {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ls := states[id]
		if !has(ls, lifecycle.AwaitingApproval) || has(ls, lifecycle.Done) || has(ls, lifecycle.Failed) {
			continue
		}
		f.ParkedAtEnd++
		if cur := a.at[id]; cur.decided {
			f.LostApprovals = append(f.LostApprovals, fmt.Sprintf("%s: parked at stage %s since %s, decided %v by %s at %s; labels %v",
				id, cur.stage, cur.seen.Format("15:04:05.000"), cur.kinds, cur.via, cur.lastAsk.Format("15:04:05.000"), ls))
		}
	}
	return f
}

func (f approvalFigures) print(row func(string, any)) {
	if !f.On {
		return
	}
	row("approval gates: parkings / approved / rejected / cancel races", fmt.Sprintf("%d / %d / %d / %d", f.Parkings, f.Approvals, f.Rejections, f.Cancels))
	row("  decided by comment / by label / comment posted again", fmt.Sprintf("%d / %d / %d", f.ByComment, f.ByLabel, f.Reasks))
	row("  kills of the replica carrying a decision out", f.Kills)
	row("  parked at the end / of those decided (lost approvals)", fmt.Sprintf("%d / %d", f.ParkedAtEnd, len(f.LostApprovals)))
}

// isDecisionDelivery reports whether a webhook delivery carries a
// decision: a comment command of the approver's or a decision label.
func isDecisionDelivery(body []byte) bool {
	for _, s := range []string{commandPrefix + " approve", commandPrefix + " reject", commandPrefix + " cancel", daemonLabels.Approved(), daemonLabels.Rejected()} {
		if bytes.Contains(body, []byte(s)) {
			return true
		}
	}
	return false
}

// approvalKills kills, every every, the replica that answers the next
// decision's delivery, a random 0–approvalKillDelay after it answered,
// and restarts it a second after: kill -9 inside the gate's handling of
// a decision.
func approvalKills(ctx context.Context, w *world, every time.Duration, rnd func(int) int) {
	for sleepCtx(ctx, every) {
		w.mu.Lock()
		w.decisionTaken = make(chan *replica, 1)
		ch := w.decisionTaken
		w.mu.Unlock()
		var r *replica
		select {
		case <-ctx.Done():
			return
		case r = <-ch:
		}
		sleepCtx(ctx, time.Duration(rnd(int(approvalKillDelay/time.Millisecond)))*time.Millisecond)
		if !w.killPod(r) {
			continue
		}
		w.mu.Lock()
		w.approvalKills++
		w.mu.Unlock()
		w.logf("approval-kill %s after it took a decision", r.inc)
		sleepCtx(ctx, time.Second)
		if err := w.startReplica(r); err != nil {
			fmt.Fprintf(w.logw, "chaos: restart %d: %v\n", r.slot, err)
		}
	}
}

// decisionAnswered hands r, which answered a decision's delivery, to a
// waiting approvalKills.
func (w *world) decisionAnswered(r *replica) {
	w.mu.Lock()
	ch := w.decisionTaken
	w.decisionTaken = nil
	w.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

func (w *world) approvalKillCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.approvalKills
}
