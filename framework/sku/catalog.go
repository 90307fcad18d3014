package sku

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"sort"
	"strings"
)

// BuiltIn is the Source of a SKU whose file gpuaccept carries in itself
// (the baselines folder of the source tree, embedded at build time).
const BuiltIn = "built-in"

// Catalog is a set of SKU files.
type Catalog struct {
	SKUs map[string]*SKU
	// files are where each SKU's file is read again from (File), by SKU
	// name.
	files map[string]skuFile
}

// skuFile is one SKU file: the folder it was loaded from and its name there.
type skuFile struct {
	fsys fs.FS
	name string
}

// Load reads every *.yaml file at the top of fsys as a SKU file; dir is
// the folder fsys stands for, used to name files in messages and as each
// SKU's Source (dir/NAME.yaml). One bad file fails the whole load with its
// name, line and field: a catalog with a silently missing SKU would skip
// its tests without saying why.
func Load(fsys fs.FS, dir string) (*Catalog, error) {
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list SKU files: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no SKU files (*.yaml) in %s", dir)
	}
	c := &Catalog{SKUs: map[string]*SKU{}, files: map[string]skuFile{}}
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("read SKU file %s: %w", n, err)
		}
		s, err := Parse(data, path.Join(dir, n))
		if err != nil {
			return nil, err
		}
		if stem := strings.TrimSuffix(n, ".yaml"); stem != s.Name {
			return nil, fmt.Errorf("%s: holds sku %q: name the file after its SKU (%s.yaml), so --sku finds what the file name says", s.File, s.Name, s.Name)
		}
		if prev, dup := c.SKUs[s.Name]; dup {
			return nil, fmt.Errorf("%s: sku %q is also defined in %s", s.File, s.Name, prev.File)
		}
		s.Source = s.File
		c.SKUs[s.Name] = s
		c.files[s.Name] = skuFile{fsys, n}
	}
	return c, nil
}

// LoadBuiltIn loads the SKU files gpuaccept carries (baselines.FS), as
// Load does, each SKU's Source being BuiltIn; their File names them
// baselines/NAME.yaml, where they lie in the source tree.
func LoadBuiltIn(fsys fs.FS) (*Catalog, error) {
	c, err := Load(fsys, "baselines")
	if err != nil {
		return nil, fmt.Errorf("built-in SKU files: %w", err)
	}
	for _, s := range c.SKUs {
		s.Source = BuiltIn
	}
	return c, nil
}

// Overlay returns a catalog of c's SKUs and site's, a SKU of site taking
// the place of c's of the same name (a site's own h100.yaml over the
// built-in one), and the names of c's SKUs so replaced, sorted, so that
// the caller can say so. Neither c nor site is changed.
func (c *Catalog) Overlay(site *Catalog) (merged *Catalog, overridden []string) {
	merged = &Catalog{SKUs: maps.Clone(c.SKUs), files: maps.Clone(c.files)}
	if merged.SKUs == nil {
		merged.SKUs = map[string]*SKU{}
	}
	if merged.files == nil {
		merged.files = map[string]skuFile{}
	}
	for n, s := range site.SKUs {
		if _, ok := merged.SKUs[n]; ok {
			overridden = append(overridden, n)
		}
		merged.SKUs[n] = s
		if f, ok := site.files[n]; ok {
			merged.files[n] = f
		} else {
			delete(merged.files, n)
		}
	}
	sort.Strings(overridden)
	return merged, overridden
}

// File returns the named SKU's file as it was read, byte for byte: what a
// results folder keeps as its baseline, and what baseline show --yaml
// prints. An error names the SKU.
func (c *Catalog) File(name string) ([]byte, error) {
	f, ok := c.files[name]
	if !ok {
		return nil, fmt.Errorf("SKU %s: no SKU file loaded", name)
	}
	data, err := fs.ReadFile(f.fsys, f.name)
	if err != nil {
		return nil, fmt.Errorf("read SKU file of %s: %w", name, err)
	}
	return data, nil
}

// Names lists the catalog's SKU names, sorted.
func (c *Catalog) Names() []string {
	out := make([]string, 0, len(c.SKUs))
	for n := range c.SKUs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the named SKU, or an error listing those that exist.
func (c *Catalog) Get(name string) (*SKU, error) {
	if s, ok := c.SKUs[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("unknown SKU %q (known: %s)", name, strings.Join(c.Names(), ", "))
}

// Auto is the --sku value that picks the SKU from the GPUs the nodes show
// (framework/skuauto); no SKU may take the name.
const Auto = "auto"

// The preferences of --sku auto among SKUs that list one GPU (AutoRank),
// most preferred first.
const (
	// AutoSite: a site's own file (--baselines DIR): the site wrote it
	// for its hardware.
	AutoSite = iota
	// AutoGeneric: a built-in SKU of the GPU alone (no Instance).
	AutoGeneric
	// AutoInstance: a built-in SKU of one cloud instance type (Instance
	// set): chosen only when nothing above lists the GPU.
	AutoInstance
)

// AutoRank is s's preference for --sku auto: AutoSite, AutoGeneric or
// AutoInstance (lower is preferred).
func (s *SKU) AutoRank() int {
	switch {
	case s.Source != BuiltIn:
		return AutoSite
	case s.Instance == "":
		return AutoGeneric
	}
	return AutoInstance
}

// AutoWhy says in words where s stands among --sku auto's preferences:
// "the site's own file DIR/NAME.yaml", "built-in", "built-in, Azure NDm
// A100 v4".
func (s *SKU) AutoWhy() string {
	switch s.AutoRank() {
	case AutoSite:
		return "the site's own file " + s.Source
	case AutoGeneric:
		return BuiltIn
	}
	return BuiltIn + ", " + s.Instance
}

// ListingGPU returns the SKUs whose gpu_variant.names list model (a
// device name as a tool printed it, compared as GPUVariant.Is does),
// most preferred first (AutoRank), then by name. A SKU without
// gpu_variant lists no model: its family name (SKU.GPU) alone is too
// loose to pick hardware by (H100 is in "NVIDIA H100 PCIe" and "NVIDIA
// H100 80GB HBM3").
func (c *Catalog) ListingGPU(model string) []*SKU {
	var out []*SKU
	for _, n := range c.Names() {
		if s := c.SKUs[n]; s.GPUVariant != nil && s.GPUVariant.Is(model) {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AutoRank() < out[j].AutoRank() })
	return out
}

// FamilyOf returns the SKUs whose family name (SKU.GPU) model contains
// (case-insensitive), sorted by name: what a refusal names when no SKU
// lists model itself.
func (c *Catalog) FamilyOf(model string) []*SKU {
	m := normName(model)
	var out []*SKU
	for _, n := range c.Names() {
		if s := c.SKUs[n]; s.GPU != "" && strings.Contains(m, normName(s.GPU)) {
			out = append(out, s)
		}
	}
	return out
}

// PickForGPU is --sku auto's choice for GPU model: the most preferred
// SKU listing it (ListingGPU) and the others that list it too. An error
// when none lists it (naming the family SKUs whose gpu it contains, if
// any) or when two are equally preferred (naming both): the user then
// gives --sku.
func (c *Catalog) PickForGPU(model string) (chosen *SKU, also []*SKU, err error) {
	list := c.ListingGPU(model)
	if len(list) == 0 {
		msg := fmt.Sprintf("no SKU lists GPU %q in its gpu_variant.names", model)
		if fam := c.FamilyOf(model); len(fam) > 0 {
			names := make([]string, len(fam))
			for i, s := range fam {
				names[i] = s.Name
			}
			msg = fmt.Sprintf("%q contains %s (the gpu of SKU %s) but no SKU lists it in gpu_variant.names", model, fam[0].GPU, strings.Join(names, ", "))
		}
		return nil, nil, fmt.Errorf("%s: give --sku (gpuaccept list skus), or add the name to your SKU file's gpu_variant.names", msg)
	}
	if len(list) > 1 && list[0].AutoRank() == list[1].AutoRank() {
		var tied []string
		for _, s := range list {
			if s.AutoRank() == list[0].AutoRank() {
				tied = append(tied, fmt.Sprintf("%s (%s)", s.Name, s.AutoWhy()))
			}
		}
		return nil, nil, fmt.Errorf("GPU %q is listed by SKUs %s alike: give --sku with one of them", model, strings.Join(tied, " and "))
	}
	return list[0], list[1:], nil
}
