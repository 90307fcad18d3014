package main

import (
	"io"

	"github.com/gpuaccept/gpuaccept/framework/history"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

var historyUsage = help("history")

func cmdHistory(args []string, stdout, stderr io.Writer) (int, error) {
	var o history.Options
	fs := cliopts.NewFlags("history", historyUsage, stderr)
	cliopts.AddHistoryQuery(fs, &o)
	if err := fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	ctx, stop := cliopts.SignalContext()
	defer stop()
	return history.Main(ctx, o, fs.Args(), stdout, stderr)
}
