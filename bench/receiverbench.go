package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms/github"
)

// ReceiverResult is one kind of webhook request.
type ReceiverResult struct {
	Kind         string         `json:"kind"`
	Concurrency  int            `json:"concurrency"`
	Requests     int            `json:"requests"`
	ReqPerSec    float64        `json:"requests_per_sec"`
	RedisCmdsPer float64        `json:"redis_cmds_per_request"`
	APICallsPer  float64        `json:"api_calls_per_request"`
	Statuses     map[string]int `json:"statuses"`
}

const (
	receiverRequests = 20000
	receiverWarmup   = 1000
	receiverConc     = 16
)

func (b *bench) receiver(ctx context.Context) error {
	fmt.Printf("## 4. Receiver: POST /webhooks/github over a real listener, %d requests per row at concurrency %d (%d warm-up excluded)\n\n", receiverRequests, receiverConc, receiverWarmup)
	fmt.Println("The payload is `testdata/github/issues.labeled.json` (" + "an `issues/labeled` event the receiver decides from the payload: HMAC verify, parse, de-dup SET NX, pre-check; no tracker call).")
	fmt.Println()
	fmt.Println("| request | req/s | Redis cmds/request | tracker API calls/request | statuses |")
	fmt.Println("|---|---:|---:|---:|---|")
	body, err := os.ReadFile(filepath.Join("..", "testdata", "github", "issues.labeled.json"))
	if err != nil {
		return err
	}
	w, err := newWorld(b.rdb, projectSpec{name: "playground", repo: "octo-org/agent-playground", command: []string{"true"}})
	if err != nil {
		return err
	}
	defer w.close()
	url := w.recvSrv.URL + "/webhooks/github"
	sig := github.SignatureHeader(body, []byte(webhookSecret+"playground"))
	forged := github.SignatureHeader(body, []byte("not-the-secret"))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: receiverConc * 2}}
	for _, kind := range []struct {
		name      string
		signature string
		sameID    bool
	}{
		{"signed, new delivery id", sig, false},
		{"signed, replayed delivery id (duplicate)", sig, true},
		{"forged signature (rejected)", forged, false},
	} {
		var seq atomic.Int64
		send := func(n int, statuses map[string]int) error {
			var mu sync.Mutex
			var firstErr error
			var next atomic.Int64
			var wg sync.WaitGroup
			for range receiverConc {
				wg.Go(func() {
					for next.Add(1) <= int64(n) {
						id := "bench-" + kind.name + "-" + strconv.FormatInt(seq.Add(1), 10)
						if kind.sameID {
							id = "bench-replayed"
						}
						req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set(github.HeaderEvent, "issues")
						req.Header.Set(github.HeaderDelivery, id)
						req.Header.Set(github.HeaderSignature, kind.signature)
						resp, err := client.Do(req)
						mu.Lock()
						if err != nil {
							if firstErr == nil {
								firstErr = err
							}
							mu.Unlock()
							return
						}
						statuses[strconv.Itoa(resp.StatusCode)]++
						mu.Unlock()
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
					}
				})
			}
			wg.Wait()
			return firstErr
		}
		if err := send(receiverWarmup, map[string]int{}); err != nil {
			return err
		}
		cnt, err := startCount(ctx, b.rdb)
		if err != nil {
			return err
		}
		before := w.apiSnap()
		statuses := map[string]int{}
		start := time.Now()
		if err := send(receiverRequests, statuses); err != nil {
			return err
		}
		el := time.Since(start)
		cmds, _, err := cnt.stop(ctx)
		if err != nil {
			return err
		}
		_, api, _ := w.apiDelta(before)
		n := float64(receiverRequests)
		r := ReceiverResult{Kind: kind.name, Concurrency: receiverConc, Requests: receiverRequests, ReqPerSec: n / el.Seconds(),
			RedisCmdsPer: float64(cmds) / n, APICallsPer: float64(api) / n, Statuses: statuses}
		b.res.Receiver = append(b.res.Receiver, r)
		fmt.Printf("| %s | %.0f | %.2f | %.2f | %v |\n", r.Kind, r.ReqPerSec, r.RedisCmdsPer, r.APICallsPer, r.Statuses)
	}
	fmt.Println()
	return nil
}
