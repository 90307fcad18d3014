// Command mpi-operator runs Kubeflow's MPIJob controller for the test
// environment. mpi-operator's own command (cmd/mpi-operator) always runs
// leader election and serves its health check on :8080 of every
// interface; a test daemon on a shared machine must take no fixed port
// outside its range and needs no lease, so this runs the same controller
// (pkg/controller, set up as cmd/mpi-operator/app does) with both
// endpoints on the addresses given, or none.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubeclientset "k8s.io/client-go/kubernetes"
	clientgokubescheme "k8s.io/client-go/kubernetes/scheme"
	restclientset "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeflow/mpi-operator/cmd/mpi-operator/app/options"
	mpijobclientset "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned"
	kubeflowscheme "github.com/kubeflow/mpi-operator/pkg/client/clientset/versioned/scheme"
	informers "github.com/kubeflow/mpi-operator/pkg/client/informers/externalversions"
	"github.com/kubeflow/mpi-operator/pkg/controller"
)

func main() {
	klog.InitFlags(nil)
	opt := options.NewServerOption()
	opt.AddFlags(flag.CommandLine)
	metricsAddr := flag.String("metrics-addr", "", "address of the /metrics endpoint (none when empty)")
	healthAddr := flag.String("health-addr", "", "address of the /healthz endpoint (none when empty)")
	flag.Parse()
	if err := run(opt, *metricsAddr, *healthAddr); err != nil {
		klog.Fatal(err)
	}
}

func run(opt *options.ServerOption, metricsAddr, healthAddr string) error {
	if opt.GangSchedulingName != "" {
		// Gang scheduling needs Volcano's or scheduler-plugins' clients,
		// which the test environment does not run.
		return fmt.Errorf("gang scheduling %q: not supported by the test environment's operator", opt.GangSchedulingName)
	}
	cfg, err := clientcmd.BuildConfigFromFlags(opt.MasterURL, opt.Kubeconfig)
	if err != nil {
		return fmt.Errorf("reading kubeconfig %s: %w", opt.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = float32(opt.QPS), opt.Burst
	kube, err := kubeclientset.NewForConfig(restclientset.AddUserAgent(cfg, "mpi-operator"))
	if err != nil {
		return fmt.Errorf("making the Kubernetes client: %w", err)
	}
	mpi, err := mpijobclientset.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("making the MPIJob client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := mpi.KubeflowV2beta1().MPIJobs(opt.Namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("listing MPIJobs (is the kubeflow.org_mpijobs CRD installed?): %w", err)
	}
	// Events name MPIJobs: their types must be in the scheme the recorder uses.
	if err := kubeflowscheme.AddToScheme(clientgokubescheme.Scheme); err != nil {
		return fmt.Errorf("adding MPIJob types to the scheme: %w", err)
	}
	var kubeOpts []kubeinformers.SharedInformerOption
	var mpiOpts []informers.SharedInformerOption
	if opt.Namespace != "" {
		kubeOpts = append(kubeOpts, kubeinformers.WithNamespace(opt.Namespace))
		mpiOpts = append(mpiOpts, informers.WithNamespace(opt.Namespace))
	}
	kf := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeOpts...)
	mf := informers.NewSharedInformerFactoryWithOptions(mpi, 0, mpiOpts...)
	c, err := controller.NewMPIJobController(ctx, kube, mpi, nil, nil,
		kf.Core().V1().ConfigMaps(), kf.Core().V1().Secrets(), kf.Core().V1().Services(),
		kf.Batch().V1().Jobs(), kf.Core().V1().Pods(), kf.Scheduling().V1().PriorityClasses(),
		mf.Kubeflow().V2beta1().MPIJobs(), opt)
	if err != nil {
		return fmt.Errorf("setting up the MPIJob controller: %w", err)
	}
	serve(metricsAddr, "/metrics", promhttp.Handler())
	serve(healthAddr, "/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	stop := make(chan struct{})
	go signalStop(stop, cancel)
	kf.Start(ctx.Done())
	mf.Start(ctx.Done())
	klog.Infof("mpi-operator: controller starting (namespace %q, cluster domain %q)", opt.Namespace, opt.ClusterDomain)
	return c.Run(opt.Threadiness, stop)
}

// serve answers path on addr in the background; a port already taken is
// fatal, so a clash shows in the log at once rather than as a missing check.
func serve(addr, path string, h http.Handler) {
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle(path, h)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			klog.Fatalf("serving %s on %s: %v", path, addr, err)
		}
	}()
}

// signalStop closes stop and cancels the informers on SIGTERM or SIGINT,
// so that testenv's stop_pid ends the controller's workers cleanly.
func signalStop(stop chan struct{}, cancel context.CancelFunc) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
	cancel()
	close(stop)
}
