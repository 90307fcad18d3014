package acceptance

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"

	"github.com/gpuaccept/gpuaccept/framework/sku"
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
