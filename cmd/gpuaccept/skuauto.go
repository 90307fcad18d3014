package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/launch"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/pluginapi"
	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/skuauto"
	"github.com/gpuaccept/gpuaccept/launchers/k8s"
)

// autoProbe is what --sku auto's probe is launched with: the run's own
// launcher flags, hosts and site.
type autoProbe struct {
	launcherName string
	launchers    *launch.Configs
	opts         launch.Options
	hosts        []string
	// nodes and gpus are --nodes and --gpus-per-node (0: not given).
	nodes, gpus int
	timeout     time.Duration
	dryRun      bool
}

// resolveAuto runs skuauto's probe for --sku auto and resolves the SKU:
// it sets c.sku to the SKU picked, prints the choice on stderr and returns
// it. Every refusal is a usage error (exit 2) that says to give --sku.
func (c *common) resolveAuto(ctx context.Context, host *pluginapi.Host, a autoProbe, stderr io.Writer) (*skuauto.Choice, error) {
	if a.dryRun {
		return nil, usageError{fmt.Errorf("--sku auto runs %s on the nodes to read their GPUs, which a dry run does not: give --sku (gpuaccept list skus)", skuauto.ProbeTest)}
	}
	if a.launcherName == k8s.Name && siteGPUResource(a.opts.Site) == "" {
		// A pod gets only the GPUs it asks for, and which resource names
		// them (nvidia.com/gpu, amd.com/gpu) is the SKU's.
		return nil, usageError{fmt.Errorf("--sku auto with --launcher k8s: the probe's pods must ask for GPUs, and the resource (nvidia.com/gpu, amd.com/gpu) is the SKU's: give it in the site file (--site, kubernetes.gpu_resource), or give --sku")}
	}
	cat, err := c.catalog(stderr)
	if err != nil {
		return nil, err
	}
	topo := plan.Topology{Scope: plan.Scope{Nodes: a.nodes, GPUsPerNode: a.gpus}, Hosts: a.hosts}
	switch {
	case topo.Nodes == 0 && len(a.hosts) > 0:
		topo.Nodes = len(a.hosts)
	case topo.Nodes == 0:
		topo.Nodes = 1
	case len(a.hosts) > topo.Nodes:
		topo.Hosts = a.hosts[:topo.Nodes]
	}
	if topo.GPUsPerNode == 0 {
		// Slurm and Kubernetes give a step only the GPUs it asks for:
		// the probe asks for as many as any SKU's node has.
		for _, s := range cat.SKUs {
			topo.GPUsPerNode = max(topo.GPUsPerNode, s.GPUsPerNode)
		}
		topo.GPUsPerNode = max(topo.GPUsPerNode, 1)
	}
	o := a.opts
	o.Hosts, o.SKU = topo.Hosts, nil
	l, err := a.launchers.New(a.launcherName, o)
	if err != nil {
		return nil, usageError{fmt.Errorf("--sku auto: %w", err)}
	}
	dir, err := probeDir(c.out)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	nodes, err := skuauto.Probe(ctx, skuauto.ProbeOptions{Plugins: host, Launcher: l, Topology: topo, Dir: dir, Timeout: a.timeout})
	if err != nil {
		return nil, usageError{err}
	}
	ch, err := skuauto.Resolve(cat, nodes, a.gpus)
	if err != nil {
		return nil, usageError{err}
	}
	fmt.Fprintln(stderr, ch.Line())
	c.sku = ch.SKU.Name
	return ch, nil
}

// siteGPUResource is the site file's kubernetes.gpu_resource, "" for none.
func siteGPUResource(st *site.Site) string {
	if st == nil || st.Kubernetes == nil {
		return ""
	}
	return st.Kubernetes.Pods.GPUResource
}

// probeDir makes the folder the probe writes to, beside the results
// folder (a Slurm job stages there, so it must be on the storage the
// results go to): in --out's parent, else in gpuaccept-results. The
// caller removes it.
func probeDir(out string) (string, error) {
	parent := resultsParentDir
	if out != "" {
		parent = filepath.Dir(filepath.Clean(out))
	} else if err := resultsParent(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", usageError{fmt.Errorf("--sku auto: probe folder in %s: %w", parent, err)}
	}
	dir, err := os.MkdirTemp(parent, ".sku-auto-probe-")
	if err != nil {
		return "", usageError{fmt.Errorf("--sku auto: probe folder in %s: %w", parent, err)}
	}
	return dir, nil
}
