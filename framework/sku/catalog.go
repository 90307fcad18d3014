package sku

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Catalog is a set of SKU files.
type Catalog struct {
	SKUs map[string]*SKU
}

// Load reads every *.yaml file at the top of fsys as a SKU file; dir is
// the folder fsys stands for, used to name files in messages. One bad file
// fails the whole load with its name, line and field: a catalog with a
// silently missing SKU would skip its tests without saying why.
func Load(fsys fs.FS, dir string) (*Catalog, error) {
	names, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list SKU files: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no SKU files (*.yaml) in %s", dir)
	}
	c := &Catalog{SKUs: map[string]*SKU{}}
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
		c.SKUs[s.Name] = s
	}
	return c, nil
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
