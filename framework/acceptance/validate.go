package acceptance

import (
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/skucheck"
)

// MaxSKUFile bounds a SKU file read from a path the user gives, in bytes.
const MaxSKUFile = 64 << 20

// CheckSKUFile parses a SKU file's data (name is for messages) and checks
// it; the error lists every problem, one a line, each with file, line and
// field. A nil SKU with an error is a file that is not a SKU file at all.
type CheckSKUFile func(data []byte, name string) (*sku.SKU, error)

// SKUChecker is the one CheckSKUFile of baseline validate, record and
// diff: the file parsed (sku.Parse), checked against its plugins
// (skucheck.Check) and by launcherCheck (nil: none; the k8s launcher's
// check of the kubernetes section, which it runs at every run, so that a
// file validate passes no run rejects), every problem of the three in one
// error, in line order.
func SKUChecker(ctx context.Context, d skucheck.Describer, launcherCheck func(*sku.SKU) error) CheckSKUFile {
	return func(data []byte, name string) (*sku.SKU, error) {
		s, err := sku.Parse(data, name)
		if s == nil {
			return nil, err // not YAML: nothing to check further
		}
		errs := []error{err, skucheck.Check(ctx, d, s)}
		if launcherCheck != nil {
			errs = append(errs, launcherCheck(s))
		}
		if err := sku.NewProblems(name, errs); err != nil {
			return nil, err
		}
		return s, nil
	}
}

// ValidateSKUFiles checks SKU files each on its own, so that one bad file
// does not hide the problems of the others, as loading the catalog would,
// and writes to w an "ok" line per good file (with the notes of
// skucheck.Unbaselined) and a "BAD" line per problem. files are paths
// (read with safefs), or with fsys set names in fsys, shown under dir;
// with fsys, the files must then load as one folder (names matching
// files, no SKU twice: the catalog's own rules). It returns how many files
// were bad; an error only for the folder's rules.
func ValidateSKUFiles(w io.Writer, fsys iofs.FS, dir string, files []string, check CheckSKUFile) (int, error) {
	bad := 0
	for _, f := range files {
		var data []byte
		var err error
		name := f
		if fsys != nil {
			data, err = iofs.ReadFile(fsys, f)
			name = path.Join(dir, f)
		} else {
			data, err = safefs.ReadNamed(f, MaxSKUFile)
		}
		var s *sku.SKU
		if err == nil {
			s, err = check(data, name)
		}
		if err != nil {
			bad++
			for _, l := range strings.Split(err.Error(), "\n") {
				fmt.Fprintf(w, "BAD %s\n", l)
			}
			continue
		}
		fmt.Fprintf(w, "ok  %s: sku %s, %s, %s\n", name, s.Name, result.Count(len(s.Suites), "suite"), result.Count(len(s.Baselines), "baseline entry", "baseline entries"))
		for _, n := range skucheck.Unbaselined(s) {
			fmt.Fprintf(w, "    note: %s\n", n)
		}
	}
	if bad == 0 && fsys != nil {
		if _, err := sku.Load(fsys, dir); err != nil {
			return 0, err
		}
	}
	return bad, nil
}

// ValidateSKUs is baseline validate: files (paths), or with none every
// *.yaml of the loader's folder (--baselines, else the built-in one),
// each checked on its own (ValidateSKUFiles, with check) so that one bad
// file does not hide the problems of the others, as loading the catalog
// would. Errors: a --baselines that is no folder or holds no SKU file,
// the folder's rules, and "N of M files are malformed".
func ValidateSKUs(w io.Writer, l *CatalogLoader, files []string, check CheckSKUFile) error {
	var fsys iofs.FS
	var dir string
	if len(files) == 0 {
		if err := BaselinesFolder(l.Dir); err != nil {
			return err
		}
		fsys, dir = l.Files()
		names, err := iofs.Glob(fsys, "*.yaml")
		if err != nil || len(names) == 0 {
			return fmt.Errorf("baseline validate: no SKU files (*.yaml) in %s", dir)
		}
		files = names
	}
	bad, err := ValidateSKUFiles(w, fsys, dir, files, check)
	if err != nil {
		return err
	}
	if bad > 0 {
		return fmt.Errorf("%d of %s %s malformed", bad, result.Count(len(files), "file"), result.Noun(bad, "is", "are"))
	}
	return nil
}
