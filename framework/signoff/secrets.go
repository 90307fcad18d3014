package signoff

import (
	"compress/gzip"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/redact"
)

// ClearSecrets names, with the line, each file of the results folder dir
// that holds a secret in clear (framework/redact's patterns, and the
// values of this environment's secret-named variables, in every form
// redact masks; a folder goes to customers, and gpuaccept masks
// everything it writes): one written by a gpuaccept from before it masked
// that format, or edited. A .gz file is read decompressed. Only regular
// files are read; links and special files are not followed or opened.
// Each finding is one line for verify's MISMATCH; none: nil.
func ClearSecrets(dir string) []string {
	var out []string
	known := redact.Env()
	err := filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		f, err := os.Open(p)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: cannot be read to look for secrets: %v", filepath.ToSlash(rel), err))
			return nil
		}
		defer f.Close()
		var src io.Reader = f
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				out = append(out, fmt.Sprintf("%s: cannot be decompressed to look for secrets: %v", filepath.ToSlash(rel), err))
				return nil
			}
			defer zr.Close()
			src = zr
		}
		line, err := known.Clear(src)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("%s: cannot be read to look for secrets: %v", filepath.ToSlash(rel), err))
		case line > 0:
			out = append(out, fmt.Sprintf("%s: line %d holds a secret in clear (what gpuaccept writes is masked)", filepath.ToSlash(rel), line))
		}
		return nil
	})
	if err != nil {
		out = append(out, fmt.Sprintf("%s: cannot be walked to look for secrets: %v", dir, err))
	}
	return out
}
