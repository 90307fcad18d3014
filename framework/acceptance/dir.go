package acceptance

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skuauto"
)

// ResultsParent is the folder, in the working directory, that holds the
// results folders of runs given no --out.
const ResultsParent = "gpuaccept-results"

// DirName is the name of the results folder of a run of kind (a suite's
// name, or "health") of SKU sku started at t, in ResultsParent:
// SKU-KIND-YYYYMMDD-HHMMSS, the time in UTC; SKU-YYYYMMDD-HHMMSS for no
// kind.
func DirName(sku, kind string, t time.Time) string {
	if kind != "" {
		sku += "-" + kind
	}
	return sku + "-" + t.UTC().Format("20060102-150405")
}

// ResultsDir picks the results folder: out when given, which must be
// neither a symbolic link nor a folder holding files already (a folder
// mixing two runs would replay and verify as one); else
// ResultsParent/NAME, with -2, -3, ... when two runs start in the same
// second. Nothing is created. Every error is the command line's (--out,
// or what lies in the working directory).
func ResultsDir(out, name string) (string, error) {
	if out != "" {
		if fi, err := os.Lstat(out); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			// Nothing is written through a link: root in a pod would write
			// the results wherever the link's owner points it.
			return "", fmt.Errorf("results folder %s is a symbolic link; give a real folder as --out", out)
		}
		if ents, err := os.ReadDir(out); err == nil && len(ents) > 0 {
			return "", fmt.Errorf("results folder %s already holds files; give a new or empty --out", out)
		}
		return out, nil
	}
	if err := CheckResultsParent(); err != nil {
		return "", err
	}
	base := filepath.Join(ResultsParent, name)
	dir := base
	for i := 2; ; i++ {
		// Lstat: a name a link holds, even one pointing nowhere, is taken.
		_, err := os.Lstat(dir)
		if errors.Is(err, iofs.ErrNotExist) {
			return dir, nil
		}
		if err != nil {
			return "", fmt.Errorf("results folder %s: %w", dir, err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// CheckResultsParent refuses a ResultsParent that is a symbolic link or
// not a folder: one planted in a shared working directory would have root
// write its results (and the raw outputs, the journal) wherever its owner
// points it. Nothing is followed; none is fine.
func CheckResultsParent() error {
	fi, err := os.Lstat(ResultsParent)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("results parent %s: %w", ResultsParent, err)
	case fi.Mode()&os.ModeSymlink != 0:
		to, _ := os.Readlink(ResultsParent)
		return fmt.Errorf("%s in the working directory is a symbolic link (to %s): results are not written through a link; remove it, or give a real folder as --out", ResultsParent, to)
	case !fi.IsDir():
		return fmt.Errorf("%s in the working directory is not a folder; remove it, or give a folder as --out", ResultsParent)
	}
	return nil
}

// ProbeDir makes the folder --sku auto's probe writes to, beside the
// results folder (a Slurm job stages there, so it must be on the storage
// the results go to): in out's parent, else in ResultsParent. The caller
// removes it.
func ProbeDir(out string) (string, error) {
	parent := ResultsParent
	if out != "" {
		parent = filepath.Dir(filepath.Clean(out))
	} else if err := CheckResultsParent(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("--sku auto: probe folder in %s: %w", parent, err)
	}
	dir, err := os.MkdirTemp(parent, ".sku-auto-probe-")
	if err != nil {
		return "", fmt.Errorf("--sku auto: probe folder in %s: %w", parent, err)
	}
	return dir, nil
}

// AutoOptions are the settings of AutoSKU: the run's own scope flags, as
// given, and its launcher.
type AutoOptions struct {
	// Catalog loads the SKUs the nodes' GPUs are matched against, once
	// the command line is known to allow a probe.
	Catalog func() (*sku.Catalog, error)
	// Plugins plans and parses skuauto.ProbeTest.
	Plugins runner.Plugins
	// NewLauncher builds the probe's launcher on its hosts, with no SKU
	// (none is known yet).
	NewLauncher NewLauncher
	// Nodes and GPUsPerNode are --nodes and --gpus-per-node (0: not
	// given); Hosts the hosts given, in order.
	Nodes, GPUsPerNode int
	Hosts              []string
	// Out is --out ("" for none): the probe writes beside it (ProbeDir).
	Out string
	// Timeout bounds the probe.
	Timeout time.Duration
	// DryRun is a dry run's --sku auto: refused, as the probe runs.
	DryRun bool
	// PodGPUs says the launcher's pods get only the GPUs they ask for
	// (k8s), whose resource name (nvidia.com/gpu, amd.com/gpu) is the
	// SKU's: Site must give it (kubernetes.gpu_resource).
	PodGPUs bool
	Site    *site.Site
}

// AutoSKU resolves --sku auto: it runs skuauto's probe on the nodes
// (ProbeTopology's scope) and picks the SKU whose gpu_variant lists the
// GPU they show (skuauto.Resolve). Every error is the command line's: it
// says to give --sku.
func AutoSKU(ctx context.Context, o AutoOptions) (*skuauto.Choice, error) {
	if o.DryRun {
		return nil, fmt.Errorf("--sku auto runs %s on the nodes to read their GPUs, which a dry run does not: give --sku (gpuaccept list skus)", skuauto.ProbeTest)
	}
	if o.PodGPUs && (o.Site == nil || o.Site.Kubernetes == nil || o.Site.Kubernetes.Pods.GPUResource == "") {
		return nil, errors.New("--sku auto with --launcher k8s: the probe's pods must ask for GPUs, and the resource (nvidia.com/gpu, amd.com/gpu) is the SKU's: give it in the site file (--site, kubernetes.gpu_resource), or give --sku")
	}
	cat, err := o.Catalog()
	if err != nil {
		return nil, err
	}
	maxGPUs := 0
	for _, s := range cat.SKUs {
		maxGPUs = max(maxGPUs, s.GPUsPerNode)
	}
	topo := ProbeTopology(o.Nodes, o.GPUsPerNode, o.Hosts, maxGPUs)
	l, err := o.NewLauncher(topo.Hosts)
	if err != nil {
		return nil, fmt.Errorf("--sku auto: %w", err)
	}
	dir, err := ProbeDir(o.Out)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	nodes, err := skuauto.Probe(ctx, skuauto.ProbeOptions{Plugins: o.Plugins, Launcher: l, Topology: topo, Dir: dir, Timeout: o.Timeout})
	if err != nil {
		return nil, err
	}
	return skuauto.Resolve(cat, nodes, o.GPUsPerNode)
}
