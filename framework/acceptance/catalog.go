package acceptance

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/gpuaccept/gpuaccept/baselines"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skuauto"
)

// BaselinesFolder checks that dir (--baselines), when given, is a
// folder: a file or a missing path would read as "no SKU files in" it.
// "" is none and fine.
func BaselinesFolder(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		return fmt.Errorf("--baselines %s: no such folder (give the folder that holds the SKU files, SKU.yaml)", dir)
	case err != nil:
		return fmt.Errorf("--baselines %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("--baselines %s is a file: give the folder that holds it (--baselines %s); every SKU file in that folder is loaded", dir, filepath.Dir(dir))
	}
	return nil
}

// LoadCatalog loads the SKU catalog: the built-in SKU files (builtin),
// and dir's (--baselines; "" for none) laid over them, a site's file
// taking the place of the built-in SKU of its name. It returns the names
// of the built-in SKUs replaced, so that nobody takes a site's bands for
// the built-in ones. An error in builtin is a broken build; one in dir
// names its file, line and field.
func LoadCatalog(builtin iofs.FS, dir string) (*sku.Catalog, []string, error) {
	if err := BaselinesFolder(dir); err != nil {
		return nil, nil, err
	}
	cat, err := sku.LoadBuiltIn(builtin)
	if err != nil {
		return nil, nil, err
	}
	if dir == "" {
		return cat, nil, nil
	}
	site, err := sku.Load(os.DirFS(dir), dir)
	if err != nil {
		return nil, nil, err
	}
	cat, over := cat.Overlay(site)
	return cat, over, nil
}

// CatalogLoader is a command's SKU catalog, loaded on first use
// (LoadCatalog) and kept: each built-in SKU a site's file replaces is said
// once.
type CatalogLoader struct {
	// Builtin holds the built-in SKU files; nil: the ones gpuaccept
	// embeds (baselines.FS).
	Builtin iofs.FS
	// Dir is --baselines, the site's SKU files; "" for none.
	Dir string
	cat *sku.Catalog
}

// Load loads the catalog once, saying on notes each built-in SKU a site's
// file overrides. Errors as LoadCatalog's.
func (l *CatalogLoader) Load(notes io.Writer) (*sku.Catalog, error) {
	if l.cat != nil {
		return l.cat, nil
	}
	builtin := l.Builtin
	if builtin == nil {
		builtin = baselines.FS
	}
	cat, over, err := LoadCatalog(builtin, l.Dir)
	if err != nil {
		return nil, err
	}
	for _, n := range over {
		fmt.Fprintf(notes, "note: SKU %s from %s overrides the built-in one\n", n, cat.SKUs[n].File)
	}
	l.cat = cat
	return cat, nil
}

// SKU loads the catalog (Load) and returns the SKU called name (--sku).
// auto is refused: only run and health, which probe their nodes, resolve
// it (AutoSKU), before they ask for a SKU by name.
func (l *CatalogLoader) SKU(notes io.Writer, name string) (*sku.SKU, error) {
	cat, err := l.Load(notes)
	if err != nil {
		return nil, err
	}
	if name == skuauto.Auto {
		return nil, errors.New("--sku auto reads the GPUs of the nodes a run or health check runs on, which this command has none of: give --sku NAME (gpuaccept list skus)")
	}
	return cat.Get(name)
}

// File returns the content of the SKU file s was loaded from, to keep a
// copy in the results folder; an error before the catalog is loaded.
func (l *CatalogLoader) File(s *sku.SKU) ([]byte, error) {
	if l.cat == nil {
		return nil, fmt.Errorf("SKU %s: no SKU files loaded", s.Name)
	}
	return l.cat.File(s.Name)
}

// Files is the folder of SKU files baseline validate checks file by
// file: Dir, or the built-in one, and its name for messages.
func (l *CatalogLoader) Files() (iofs.FS, string) {
	if l.Dir != "" {
		return os.DirFS(l.Dir), l.Dir
	}
	if l.Builtin != nil {
		return l.Builtin, "baselines"
	}
	return baselines.FS, "baselines"
}
