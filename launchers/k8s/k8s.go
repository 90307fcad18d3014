// Package k8s is the launcher that runs a plan's steps as pods on a
// Kubernetes cluster through client-go: a batch/v1 Indexed Job plus a
// headless Service by default, or a JobSet, a Volcano Job or a Kubeflow
// MPIJob (v2beta1). Multi-node MPI steps run sshd in every pod with a key
// from a Secret created for the run, and the lead pod runs mpirun over the
// pods' stable DNS names. What the pods need on this hardware (GPU and RDMA
// resources, network annotations, /dev/shm, IPC_LOCK, tolerations, node
// selectors, image, queue) comes from the SKU file's kubernetes section.
//
// Pods are followed with a watch; scheduling failures (Unschedulable,
// ImagePullBackOff, OOMKilled, ...) end the step with the status text.
// Logs are read once a pod has ended. Everything created carries the label
// gpuaccept.dev/run=RUN and is deleted with foreground propagation when the
// test ends, times out or is cancelled; Clean removes leftovers by run id.
package k8s

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/launchers/rankstart"
)

// Name is the --launcher value.
const Name = "k8s"

// Flavors of workload the launcher renders (--k8s-flavor).
const (
	FlavorJob     = "job"
	FlavorJobSet  = "jobset"
	FlavorVolcano = "volcano"
	FlavorMPIJob  = "mpijob"
)

// Flavors lists the --k8s-flavor values.
var Flavors = []string{FlavorJob, FlavorJobSet, FlavorVolcano, FlavorMPIJob}

// Labels put on every object the launcher creates.
const (
	// LabelRun holds the run id: Clean deletes by it.
	LabelRun = "gpuaccept.dev/run"
	// LabelStep holds the object name of the step's workload; it selects
	// that step's pods.
	LabelStep = "gpuaccept.dev/step"
	// LabelRole is "lead" on the pod whose log is the step's log (the one
	// running mpirun, or the only pod), "worker" on the others.
	LabelRole = "gpuaccept.dev/role"
	// LabelManagedBy is app.kubernetes.io/managed-by=gpuaccept.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelKueueQueue is the label by which Kueue admits a workload to a
	// LocalQueue.
	LabelKueueQueue = "kueue.x-k8s.io/queue-name"
)

// Config is the launcher's settings: the cluster and how to shape pods.
type Config struct {
	// Kubeconfig is the kubeconfig file; empty: $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster service account, as kubectl does.
	Kubeconfig string
	// Context is the kubeconfig context; empty: its current context.
	Context string
	// Namespace is where the objects go; empty: the context's namespace,
	// else "default".
	Namespace string
	// Image overrides the SKU's kubernetes.image.
	Image string
	// Flavor is one of Flavors; empty means FlavorJob.
	Flavor string
	// Queue overrides the SKU's kubernetes.queue (Kueue LocalQueue, or the
	// Volcano queue for FlavorVolcano).
	Queue string
	// PendingTimeout is how long a pod may stay unschedulable before the
	// step fails with the scheduler's reason; zero means 5 minutes. Image
	// pull back-offs and OOM kills fail at once.
	PendingTimeout time.Duration
	// SKU gives the pods' resources, annotations, ...; nil or without a
	// kubernetes section means none (and Image must be set).
	SKU *sku.SKU
	// MPIArgs are extra rank starter arguments.
	MPIArgs []string
	// Start is what every MPI step's starter line starts from
	// (rankstart.FromLaunch: the site's mpi settings, HCOLL off for Open
	// MPI); nil: nothing but MPIArgs.
	Start *rankstart.Options
	// Site is the site file (--site): its kubernetes part lies over the
	// SKU's for the rank pods, and shapes the launcher pod, the IMEX
	// ComputeDomain and the host folders; nil: none.
	Site *site.Site
	// Starter starts the ranks of MPI steps in the lead pod
	// (--mpi-flavor); nil means Open MPI's mpirun. It must speak for an
	// MPI the image holds.
	Starter rankstart.Starter
	// Hosts are the Kubernetes node names (--hosts, --hostfile) a test's
	// pods must run on, node i of its topology on Hosts[i] where the
	// workload allows (see the package README); a request's own
	// Topology.Hosts win. Empty: the scheduler places the pods. New
	// refuses a name that is no valid node name.
	Hosts []string
}

// Launcher runs steps as pods. Build it with New.
type Launcher struct {
	cfg Config
	// RunID labels every object of this gpuaccept run ("ga-" + 8 hex).
	RunID string
	// Progress receives one line per test naming the run id and namespace,
	// so a user can clean up after a crash; nil means os.Stderr.
	Progress io.Writer

	mu      sync.Mutex
	n       int // tests launched, numbers object names
	clients *clients
}

type clients struct {
	rest      *rest.Config
	core      kubernetes.Interface
	dyn       dynamic.Interface
	namespace string
}

func init() {
	launch.Register(Name, func() launch.Config { return &Config{Flavor: FlavorJob, PendingTimeout: 5 * time.Minute} })
}

// Bind implements launch.Config: --kubeconfig, --context, --namespace
// and --image (kubectl's own names), --k8s-flavor, --k8s-queue and
// --k8s-pending-timeout.
func (c *Config) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", c.Kubeconfig, "kubeconfig file (default $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&c.Context, "context", c.Context, "kubeconfig context (default its current context)")
	fs.StringVar(&c.Namespace, "namespace", c.Namespace, "namespace for the test's objects (default the context's, else default)")
	fs.StringVar(&c.Image, "image", c.Image, "container image with the benchmarks, mpirun and sshd (default the SKU's kubernetes.image)")
	fs.StringVar(&c.Flavor, "k8s-flavor", c.Flavor, "workload kind: "+strings.Join(Flavors, ", "))
	fs.StringVar(&c.Queue, "k8s-queue", c.Queue, "Kueue LocalQueue (or Volcano queue) (default the SKU's kubernetes.queue)")
	fs.DurationVar(&c.PendingTimeout, "k8s-pending-timeout", c.PendingTimeout, "how long a pod may stay unschedulable before the test fails with the scheduler's reason")
}

// Aliases implements launch.Renamer: --k8s-queue was --queue, a name a
// batch scheduler's launcher would want for its own queue; --queue keeps
// working while no other launcher binds it.
func (c *Config) Aliases() map[string]string { return map[string]string{"queue": "k8s-queue"} }

// Build implements launch.Config: the pods' shape from o's SKU, pinned to
// o's hosts, ranks started by the starter --mpi-flavor names. Every
// setting is checked (New); a flag's error names the flag.
func (c *Config) Build(o launch.Options) (launch.Launcher, error) {
	cfg := *c
	if cfg.PendingTimeout <= 0 {
		return nil, fmt.Errorf("--k8s-pending-timeout %s: want a time limit above zero", cfg.PendingTimeout)
	}
	st, base, err := rankstart.FromLaunch(o)
	if err != nil {
		return nil, fmt.Errorf("launcher k8s: %w", err)
	}
	cfg.SKU, cfg.Hosts, cfg.Starter, cfg.Start, cfg.Site = o.SKU, o.Hosts, st, &base, o.Site
	return New(cfg)
}

// New checks cfg and returns a launcher with a fresh run id. It does not
// contact the cluster: Commands (--dry-run) works without one.
func New(cfg Config) (*Launcher, error) {
	if cfg.Flavor == "" {
		cfg.Flavor = FlavorJob
	}
	ok := false
	for _, f := range Flavors {
		ok = ok || f == cfg.Flavor
	}
	if !ok {
		return nil, fmt.Errorf("--k8s-flavor %q: want one of %s", cfg.Flavor, strings.Join(Flavors, ", "))
	}
	if cfg.PendingTimeout <= 0 {
		cfg.PendingTimeout = 5 * time.Minute
	}
	if cfg.Starter == nil {
		cfg.Starter = rankstart.Default()
	} else if err := rankstart.AcrossHosts(cfg.Starter); err != nil {
		return nil, fmt.Errorf("launcher k8s: %w", err)
	}
	if cfg.Image == "" && siteKube(cfg.Site).Pods.Image == "" && kube(cfg.SKU).Image == "" {
		name := "the SKU file"
		if cfg.SKU != nil {
			name = cfg.SKU.File
		}
		where := "a site file (--site) with kubernetes.image"
		if cfg.Site != nil {
			where = "kubernetes.image in the site file " + cfg.Site.File
		}
		return nil, fmt.Errorf("launcher k8s needs a container image holding the benchmarks, mpirun and sshd, and none is given: give --image, or %s, or kubernetes.image in %s (no image is built in: a public default would not hold your fabric's libraries)", where, name)
	}
	if _, err := podShape(cfg); err != nil {
		return nil, err
	}
	if err := checkNodeNames(cfg.Hosts); err != nil {
		return nil, fmt.Errorf("launcher k8s: --hosts: %w", err)
	}
	return &Launcher{cfg: cfg, RunID: NewRunID()}, nil
}

// NewRunID returns a fresh run id: "ga-" and 8 random hex digits, short
// enough to leave room in 63-character object names.
func NewRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "ga-" + hex.EncodeToString(b[:])
}

// Name implements launch.Launcher.
func (l *Launcher) Name() string { return Name }

// siteKube returns the site's kubernetes part, or an empty one.
func siteKube(s *site.Site) *site.Kubernetes {
	if s == nil || s.Kubernetes == nil {
		return &site.Kubernetes{}
	}
	return s.Kubernetes
}

// kube returns the SKU's kubernetes section, or an empty one.
func kube(s *sku.SKU) *sku.Kubernetes {
	if s == nil || s.Kubernetes == nil {
		return &sku.Kubernetes{}
	}
	return s.Kubernetes
}

// clientConfig resolves kubeconfig, context and namespace as kubectl does.
func clientConfig(kubeconfig, context string) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
}

// namespace is the namespace objects go to; without a usable kubeconfig
// (a dry run on a laptop) it is "default", as kubectl would say.
func (l *Launcher) namespace() string {
	if l.cfg.Namespace != "" {
		return l.cfg.Namespace
	}
	ns, _, err := clientConfig(l.cfg.Kubeconfig, l.cfg.Context).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// connect builds the clients once.
func (l *Launcher) connect() (*clients, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients != nil {
		return l.clients, nil
	}
	c, err := dial(l.cfg.Kubeconfig, l.cfg.Context, l.cfg.Namespace)
	if err != nil {
		return nil, err
	}
	l.clients = c
	return c, nil
}

// dial builds clients for a kubeconfig (empty: the default chain) and
// context, and resolves the namespace (empty: the context's, else
// "default").
func dial(kubeconfig, context, namespace string) (*clients, error) {
	cc := clientConfig(kubeconfig, context)
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("k8s: load kubeconfig (--kubeconfig %q, --context %q): %w", kubeconfig, context, err)
	}
	if namespace == "" {
		if namespace, _, err = cc.Namespace(); err != nil || namespace == "" {
			namespace = "default"
		}
	}
	return newClients(rc, namespace)
}

func newClients(rc *rest.Config, namespace string) (*clients, error) {
	rc = rest.CopyConfig(rc)
	rc.UserAgent = "gpuaccept"
	core, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("k8s: client for %s: %w", rc.Host, err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("k8s: dynamic client for %s: %w", rc.Host, err)
	}
	return &clients{rest: rc, core: core, dyn: dyn, namespace: namespace}, nil
}

func (l *Launcher) progress() io.Writer {
	if l.Progress != nil {
		return l.Progress
	}
	return redact.Env().Stream(os.Stderr)
}
