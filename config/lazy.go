package config

import (
	"fmt"
	"os"
)

// Secrets is a set of the config's secret groups, named by what uses them,
// so a tool resolves only those its command needs (LoadFor).
type Secrets uint8

// The secret groups.
const (
	// RedisSecrets: redis.password and redis.sentinel_password.
	RedisSecrets Secrets = 1 << iota
	// TrackerSecrets: each project's token and github_app.private_key.
	TrackerSecrets
	// WebhookSecrets: each project's webhook secrets.
	WebhookSecrets
	// StatusSecrets: status.token.
	StatusSecrets
	// PipelineSecrets: pipeline.secrets and workspace.git.token, which only
	// a pipeline run reads.
	PipelineSecrets

	// AllSecrets is what the daemon resolves (Load).
	AllSecrets = RedisSecrets | TrackerSecrets | WebhookSecrets | StatusSecrets | PipelineSecrets
)

// LoadFor is Load resolving only the secret groups in need: the file is
// decoded, defaulted and validated in full, and every other secret keeps
// its source with an empty Value. agentsmithctl loads with
// RedisSecrets|TrackerSecrets for its commands that talk to a tracker, so
// an operator needs the tokens they use and never a webhook secret.
func LoadFor(path string, need Secrets) (*Config, error) {
	data, baseDir, err := readFile(path)
	if err != nil {
		return nil, err
	}
	c, err := parse(data, os.LookupEnv, baseDir, need, path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// LoadRedisOnly reads the file at path for a tool that talks only to Redis
// (agentsmithctl status, history, events, report, release, cancel, logs):
// it applies defaults and validates and resolves the redis section, and
// reads no tracker token, App key, webhook secret or status token, so an
// operator can run those commands without the trackers' secrets. Projects
// are decoded as written (names, platforms, repositories map tickets to
// projects) but not validated: use Load before talking to a tracker.
func LoadRedisOnly(path string) (*Config, error) {
	data, baseDir, err := readFile(path)
	if err != nil {
		return nil, err
	}
	var c Config
	var errs Errors
	if !decode(data, &c, &errs, path) {
		return nil, fmt.Errorf("config %s: %w", path, errs)
	}
	c.applyDefaults(baseDir)
	c.Consumer.Output.applyDefaults(baseDir, c.Consumer.WorkDir)
	c.resolveCommands(baseDir)
	c.Redis.validate(&errs, baseDir)
	c.Redis.Password.resolve("redis.password", os.LookupEnv, baseDir, &errs)
	c.Redis.SentinelPassword.resolve("redis.sentinel_password", os.LookupEnv, baseDir, &errs)
	if len(errs) > 0 {
		return nil, fmt.Errorf("config %s: %w", path, errs)
	}
	return &c, nil
}

// LoadStatusToken reads the config at path for the admin listener's token
// alone: status.token (or token_env / token_file) resolved, nothing else,
// so agentsmithctl can print it where the trackers' secrets are not set.
// An unset Secret means the config names none (serve then keeps one in a
// file beside the config, internal/statustoken).
func LoadStatusToken(path string) (Secret, error) {
	data, baseDir, err := readFile(path)
	if err != nil {
		return Secret{}, err
	}
	var c Config
	var errs Errors
	if !decode(data, &c, &errs, path) {
		return Secret{}, fmt.Errorf("config %s: %w", path, errs)
	}
	st := &c.Status
	oneOf(&st.Token, "status.token", &errs, st.Token, st.tokenEnv, st.tokenFile)
	st.Token.resolve("status.token", os.LookupEnv, baseDir, &errs)
	if len(errs) > 0 {
		return Secret{}, fmt.Errorf("config %s: %w", path, errs)
	}
	return st.Token, nil
}
