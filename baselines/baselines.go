// Package baselines embeds the SKU files: one YAML file per SKU with its
// suites and golden baseline (see framework/sku for the schema). Add a SKU by
// adding a file here; `gpuaccept baseline validate` checks them all.
package baselines

import "embed"

// FS holds every *.yaml SKU file of this folder.
//
//go:embed *.yaml
var FS embed.FS
