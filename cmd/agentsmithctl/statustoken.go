package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/statustoken"
)

// statusTokenCmd prints the token the admin listener requires, for the
// status page's login form and a scrape config: status.token's value, or
// the one agentsmithd serve keeps in the file beside a config that names
// none. The file is read as the daemon reads it (no symlink, owned by this
// user, mode 0600), so only the daemon's user (or root) can print it.
func statusTokenCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status-token",
		Short: "Print the admin listener's token (status page login, /metrics bearer token)",
		Long: `Prints the token every request to the daemon's admin listener (admin_listen: /status,
/status.json, /status/logs, /metrics) needs: status.token when the config sets it, else the
token agentsmithd serve created on its first start in <config name>.status-token beside the
config (mode 0600, readable by the daemon's user only). Log in to /status with it, or send it as
"Authorization: Bearer <token>". It is a secret: do not paste it where others can read it.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := a.configPath(); err != nil {
				return err
			}
			s, err := config.LoadStatusToken(a.cfgPath)
			if err != nil {
				return err
			}
			out := struct {
				Source string `json:"source"`
				Token  string `json:"token"`
			}{s.String(), s.Value()}
			if !s.IsSet() {
				path, err := filepath.Abs(statustoken.Path(a.cfgPath))
				if err != nil {
					return err
				}
				tok, err := statustoken.ReadAsOperator(path)
				if errors.Is(err, fs.ErrNotExist) {
					return notFound("%s does not exist yet: agentsmithd serve -c %s creates it on its first start", path, a.cfgPath)
				}
				if err != nil {
					return err
				}
				out.Source, out.Token = "file:"+path, tok
			}
			return a.emit(out, func(w io.Writer) { fmt.Fprintln(w, out.Token) })
		},
	}
}
