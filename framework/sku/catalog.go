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
