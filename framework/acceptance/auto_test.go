package acceptance

import (
	"context"
	"errors"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/gpuaccept/gpuaccept/framework/site"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// --sku auto is refused before anything is probed, and before the SKU
// files are read, where a probe cannot run or cannot see the GPUs: a dry
// run, pods that would ask for no GPU.
func TestAutoSKURefusals(t *testing.T) {
	read := false
	catalog := func() (*sku.Catalog, error) { read = true; return nil, errors.New("bad --baselines") }
	withResource := &site.Site{Kubernetes: &site.Kubernetes{}}
	withResource.Kubernetes.Pods.GPUResource = "nvidia.com/gpu"
	cases := []struct {
		name string
		o    AutoOptions
		want string
		read bool
	}{
		{"dry run", AutoOptions{DryRun: true, PodGPUs: true}, "--sku auto runs health.node on the nodes to read their GPUs, which a dry run does not: give --sku (gpuaccept list skus)", false},
		{"pods without the GPU resource", AutoOptions{PodGPUs: true}, "--sku auto with --launcher k8s: the probe's pods must ask for GPUs", false},
		{"a site without kubernetes", AutoOptions{PodGPUs: true, Site: &site.Site{}}, "--sku auto with --launcher k8s: ", false},
		{"the SKU files, once allowed", AutoOptions{PodGPUs: true, Site: withResource}, "bad --baselines", true},
		{"the SKU files, another launcher", AutoOptions{}, "bad --baselines", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			read = false
			c.o.Catalog = catalog
			_, err := AutoSKU(context.Background(), c.o)
			assert.ErrorContains(t, err, c.want)
			assert.Equal(t, read, c.read)
		})
	}
}
