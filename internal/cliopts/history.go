package cliopts

import (
	"github.com/spf13/pflag"

	"github.com/gpuaccept/gpuaccept/framework/history"
)

// AddHistory declares --history on fs: the results store (history.Open)
// that gpuaccept history reads and that run, check, health and localise
// append to.
func AddHistory(fs *pflag.FlagSet, store *string) {
	fs.StringVar(store, "history", "", "results store: a SQLite file, postgres://..., or "+history.Off+" (default $XDG_STATE_HOME/gpuaccept/history.db, else ~/.local/state/gpuaccept/history.db)")
}

// AddHistoryQuery declares gpuaccept history's flags on fs, into o.
func AddHistoryQuery(fs *pflag.FlagSet, o *history.Options) {
	fs.StringVar(&o.By, "by", history.ByNode, "group the table by node, gpu, nic or test")
	fs.StringVar(&o.Host, "host", "", "only the points of this host")
	fs.StringVar(&o.GPU, "serial", "", "only the points of this GPU (serial or UUID)")
	fs.StringVar(&o.NIC, "nic", "", "only the points of this NIC (GUID or adapter name)")
	fs.StringVar(&o.Test, "test", "", "only the points of this test (PLUGIN.TEST)")
	fs.StringVar(&o.Metric, "metric", "", "only the points of this metric")
	fs.StringVar(&o.Format, "format", "table", "table, json, or html (a trend plot)")
	AddHistory(fs, &o.Store)
}
