package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/proc"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/internal/cliopts"
	"github.com/gpuaccept/gpuaccept/launchers/k8s"
)

var cleanUsage = help("clean")

func cmdClean(args []string, stdout, stderr io.Writer) (int, error) {
	var runID, kubeconfig, kctx, ns string
	var local bool
	var timeout time.Duration
	fs := cliopts.NewFlags("clean", cleanUsage, stderr)
	fs.StringVar(&runID, "run", "", "run id to clean up (ga-...)")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&kctx, "context", "", "kubeconfig context (default its current context)")
	fs.StringVar(&ns, "namespace", "", "namespace of the run (default the context's, else default)")
	fs.DurationVar(&timeout, "timeout", 2*time.Minute, "give up waiting for the objects to go after this long")
	fs.BoolVar(&local, "local", false, "kill and remove what killed gpuaccept processes left on this host (pid namespaces, cgroups, temp folders)")
	if err := fs.Parse(args); err != nil {
		return exitUsage, cliopts.Usage(err)
	}
	if (runID == "" && !local) || fs.NArg() > 0 {
		return exitUsage, cliopts.Usage(errors.New("clean: want --run ID (a Kubernetes run) or --local, and no arguments"))
	}
	if local {
		done, err := proc.Clean()
		for _, d := range done {
			fmt.Fprintln(stdout, d)
		}
		if err != nil {
			return exitUsage, err
		}
		if len(done) == 0 {
			fmt.Fprintln(stdout, "nothing left on this host by gpuaccept processes that no longer live")
		}
		if runID == "" {
			return exitOK, nil
		}
	}
	ctx, stop := cliopts.SignalContext()
	defer stop()
	n, err := k8s.Clean(ctx, k8s.CleanOptions{Kubeconfig: kubeconfig, Context: kctx, Namespace: ns, Timeout: timeout}, runID)
	if err != nil {
		return exitUsage, err
	}
	fmt.Fprintf(stdout, "deleted %s of run %s\n", result.Count(n, "object"), runID)
	if n == 0 && ns == "" {
		// The usual reason: the run used --namespace and clean did not.
		fmt.Fprintf(stderr, "note: nothing of run %s in the context's namespace; give the run's --namespace if it used one\n", runID)
	}
	return exitOK, nil
}
