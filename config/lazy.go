package config

import (
	"fmt"
	"os"
)

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
	if !decode(data, &c, &errs) {
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
	if !decode(data, &c, &errs) {
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
