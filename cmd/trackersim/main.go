// Command trackersim runs the local tracker emulator: an in-memory issue
// store served through GitHub's REST dialect, a page that lists the issues
// with their labels, and signed webhook deliveries to one URL. It lets the
// daemon be tried and tested with no tracker account.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/agentsmithd/agentsmithd/trackersim"
)

const (
	defaultListen   = "127.0.0.1:8686"
	demoRepo        = "demo/app"
	shutdownTimeout = 5 * time.Second
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "trackersim:", err)
		os.Exit(1)
	}
}

func run() error {
	listen := flag.String("listen", defaultListen, "address to serve on")
	hookURL := flag.String("hook-url", "", "deliver signed webhooks for every repository to this URL")
	hookSecretEnv := flag.String("hook-secret-env", "", "name of the environment variable holding the webhook secret")
	seed := flag.Int("seed-issues", 0, "create this many demo issues in "+demoRepo)
	ifMatch := flag.String("github-if-match", string(trackersim.IfMatchRejectWeak),
		"how the GitHub dialect answers If-Match on writes: reject-weak (GitHub's behaviour: 400 for a weak validator), ignore, or 412-apply (412 although the write is applied)")
	adoOrgs := flag.String("ado-organisations", "",
		"comma-separated Azure DevOps organisations whose work items are numbered across their projects, as Azure DevOps numbers them, so organisation-level WIQL and batch reads are served (owners not named keep per-repository numbers, as GitHub and GitLab number issues)")
	flag.Parse()
	mode, err := trackersim.ParseIfMatchMode(*ifMatch)
	if err != nil {
		return fmt.Errorf("--github-if-match: %w", err)
	}

	cfg := zap.NewDevelopmentConfig()
	cfg.DisableStacktrace = true
	log, err := cfg.Build()
	if err != nil {
		return fmt.Errorf("logger: %w", err)
	}
	defer func() { _ = log.Sync() }()

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	base := "http://" + publicAddr(ln.Addr().(*net.TCPAddr))

	s := trackersim.New(trackersim.Options{Logger: log, BaseURL: base, GitHubIfMatch: mode})
	defer s.Close()
	for _, org := range strings.Split(*adoOrgs, ",") {
		if org = strings.TrimSpace(org); org != "" {
			s.NumberWorkItemsPerOrganisation(org)
		}
	}
	s.CreateRepo(demoRepo)
	for i := 1; i <= *seed; i++ {
		s.CreateIssue(demoRepo, fmt.Sprintf("Demo issue %d", i), "Created by trackersim --seed-issues.")
	}
	if *hookURL != "" {
		secret := ""
		if *hookSecretEnv != "" {
			v, ok := os.LookupEnv(*hookSecretEnv)
			if !ok {
				return fmt.Errorf("--hook-secret-env: environment variable %s is not set", *hookSecretEnv)
			}
			secret = v
		}
		s.AddHook(trackersim.Hook{URL: *hookURL, Secret: secret})
	}

	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("trackersim page:        %s/\n", base)
	fmt.Printf("base_url for github:    %s/github/\n", base)
	fmt.Printf("base_url for gitlab:    %s/gitlab/api/v4/\n", base)
	fmt.Printf("base_url for azuredevops: %s/ado/\n", base)
	fmt.Printf("base_url for jira:      %s/jira/\n", base)
	fmt.Printf("control API:            %s/sim/\n", base)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// publicAddr turns a wildcard listen address into one a browser can open.
func publicAddr(a *net.TCPAddr) string {
	host := a.IP.String()
	if a.IP == nil || a.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, fmt.Sprint(a.Port))
}
