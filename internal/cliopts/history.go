package cliopts

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept"
	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/history"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/signoff"
)

// AddHistory declares --history on fs: the results store (history.Open)
// that gpuaccept history reads and that run, check, health and localise
// append to.
func AddHistory(fs *pflag.FlagSet, store *string) {
	fs.StringVar(store, "history", "", "results store: a SQLite file, postgres://..., or "+history.Off+" (default $XDG_STATE_HOME/gpuaccept/history.db, else ~/.local/state/gpuaccept/history.db)")
}

// History is gpuaccept history's flags: the query (history.Options) and
// --plugin-path, for the plugins that verify a folder before import.
type History struct {
	history.Options
	PluginPath string
}

// AddHistoryQuery declares gpuaccept history's flags on fs, into h.
func AddHistoryQuery(fs *pflag.FlagSet, h *History) {
	o := &h.Options
	fs.StringVar(&o.By, "by", history.ByNode, "group the table (and order drift's lines) by node, gpu, nic or test; gpu and nic leave out what names no GPU or NIC")
	fs.StringVar(&o.Host, "host", "", "only the points of this host")
	fs.StringVar(&o.GPU, "serial", "", "only the points of this GPU (serial or UUID)")
	fs.StringVar(&o.NIC, "nic", "", "only the points of this NIC (GUID or adapter name)")
	fs.StringVar(&o.Test, "test", "", "only the points of this test (PLUGIN.TEST)")
	fs.StringVar(&o.Metric, "metric", "", "only the points of this metric")
	fs.StringVar(&o.Format, "format", "table", "table, json, or html (a trend plot)")
	fs.BoolVar(&o.All, "all", false, "list every point, not only the latest of each part and series")
	fs.StringVar(&h.PluginPath, "plugin-path", os.Getenv("GPUACCEPT_PLUGIN_PATH"), "folders (colon-separated) searched for external gpuaccept-plugin-NAME executables, to verify folders before import (env GPUACCEPT_PLUGIN_PATH)")
	AddHistory(fs, &o.Store)
}

// Main runs gpuaccept history (history.Main) with args, each folder to
// import verified first as gpuaccept verify does (HistoryVerifier, with
// the plugins of h.PluginPath); version is this gpuaccept's.
func (h *History) Main(ctx context.Context, version string, args []string, stdout, stderr io.Writer) (int, error) {
	host := pluginapi.NewHost(h.PluginPath)
	defer host.Close()
	o := h.Options
	o.Verify = HistoryVerifier(signoff.Options{Version: version, Builtin: baselines.FS, Recordings: gpuaccept.Recordings, Plugins: host})
	return history.Main(ctx, o, args, stdout, stderr)
}

// maxFindings is how many of a refused folder's findings its error names.
const maxFindings = 3

// HistoryVerifier is the check gpuaccept history import runs on each
// folder: signoff.Verify with o (gpuaccept verify's options: built-in
// baselines, shipped recordings, the command's plugins) and its secrets
// check (signoff.ClearSecrets). A folder with any finding (a file its
// manifest does not match, a verdict its raw outputs do not give, a
// secret in clear) is refused: the error counts the findings, names the
// first three and points to gpuaccept verify DIR for the rest. A folder
// Verify cannot read is refused with Verify's error.
func HistoryVerifier(o signoff.Options) history.Verifier {
	return func(ctx context.Context, dir string) error {
		res, err := signoff.Verify(ctx, dir, o)
		if err != nil {
			return fmt.Errorf("verify: %w", err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("verify: interrupted before every verdict was re-judged: %w", ctx.Err())
		}
		var found []string
		for _, l := range res.Lines {
			if l.Kind == signoff.Mismatch || l.Kind == signoff.Rejudged {
				found = append(found, l.String())
			}
		}
		for _, p := range signoff.ClearSecrets(dir) {
			found = append(found, signoff.Mismatch+" "+p)
		}
		if len(found) == 0 {
			return nil
		}
		first := found[:min(len(found), maxFindings)]
		more := ""
		if len(found) > maxFindings {
			more = fmt.Sprintf("; and %d more", len(found)-maxFindings)
		}
		return fmt.Errorf("not imported: gpuaccept verify finds %s (gpuaccept verify %s lists them): %s%s",
			result.Count(len(found), "finding"), dir, redact.PrintableLine(strings.Join(first, "; ")), more)
	}
}
