package main

import (
	"io"

	"github.com/gpuaccept/gpuaccept/internal/cliopts"
)

var historyUsage = help("history")

func cmdHistory(args []string, stdout, stderr io.Writer) (int, error) {
	var h cliopts.History
	fs := cliopts.NewFlags("history", historyUsage, stderr)
	cliopts.AddHistoryQuery(fs, &h)
	if err := fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	ctx, stop := cliopts.SignalContext()
	defer stop()
	return h.Main(ctx, getVersion(), fs.Args(), stdout, stderr)
}
