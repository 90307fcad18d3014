// Package manifest is a results folder's sign-off record: manifest.json
// lists the SHA-256 of every raw output, of the copy of the baseline file
// that judged the run and of the journal of verdicts, with the gpuaccept
// version. Check finds every file edited, removed or added since, naming
// it, so a customer can check a vendor's sign-off without rerunning
// anything (gpuaccept verify also re-judges the raw outputs).
//
// The manifest does not protect itself: publish or sign its own SHA-256
// (Sum) alongside the folder.
package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// File is the manifest's name in a results folder.
const File = "manifest.json"

// Covered are the parts of a results folder the manifest hashes: the raw
// outputs, the baseline copy and the journal. Reports (results.json,
// junit.xml, report.html, ...) are derived from these and can be rebuilt
// with gpuaccept report, so they are not listed. The same parts of every
// results folder nested in it (the sub-runs of a localisation,
// localise/TEST/STAGE/RUN/, see SubRuns) are covered too: their raw
// outputs are the evidence against a suspect, and a suspect fails the run.
var Covered = []string{"raw", journal.BaselineDir, journal.File}

// SubRuns lists the results folders nested in dir, relative to it with
// forward slashes, sorted: every folder below dir, outside the covered
// parts of dir or of another results folder, that holds a journal.
func SubRuns(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && (d.Name() == "raw" || d.Name() == journal.BaselineDir) {
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), journal.File)); err == nil {
				return fs.SkipDir // a results folder's own outputs
			}
		}
		if p == dir {
			return nil
		}
		if _, err := os.Stat(filepath.Join(p, journal.File)); err == nil {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find the sub-runs of %s: %w", dir, err)
	}
	sort.Strings(out)
	return out, nil
}

// Entry is one file of the folder.
type Entry struct {
	// Path is relative to the results folder, with forward slashes.
	Path string `json:"path"`
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256 string `json:"sha256"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
}

// Manifest is the content of manifest.json.
type Manifest struct {
	// Version is the gpuaccept version that made the run.
	Version string    `json:"gpuaccept_version"`
	SKU     string    `json:"sku"`
	Created time.Time `json:"created"`
	// Baseline is the copy of the SKU file the run was judged against.
	Baseline *Entry `json:"baseline,omitempty"`
	// Files are every covered file (the baseline included), sorted by path.
	Files []Entry `json:"files"`
}

// Build hashes the covered files of the results folder dir and of the
// results folders nested in it.
func Build(dir, version, sku string) (*Manifest, error) {
	m := &Manifest{Version: version, SKU: sku, Created: time.Now().UTC(), Files: []Entry{}}
	subs, err := SubRuns(dir)
	if err != nil {
		return nil, fmt.Errorf("build manifest: %w", err)
	}
	var roots []string
	for _, folder := range append([]string{""}, subs...) {
		for _, c := range Covered {
			roots = append(roots, filepath.Join(dir, filepath.FromSlash(folder), c))
		}
	}
	for _, root := range roots {
		if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			e, err := hashFile(dir, p)
			if err != nil {
				return err
			}
			m.Files = append(m.Files, e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("build manifest of %s: %w", dir, err)
		}
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	want := journal.BaselineDir + "/" + sku + ".yaml"
	for i := range m.Files {
		if m.Files[i].Path == want {
			b := m.Files[i]
			m.Baseline = &b
		}
	}
	return m, nil
}

// hashFile hashes p, a file of folder dir: only a regular file reached
// without a link (safefs), so a FIFO does not block verify and a link out
// of the folder is not read.
func hashFile(dir, p string) (Entry, error) {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return Entry{}, err
	}
	f, err := safefs.Open(dir, rel)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Entry{}, fmt.Errorf("hash %s: %w", p, err)
	}
	return Entry{Path: filepath.ToSlash(rel), SHA256: hex.EncodeToString(h.Sum(nil)), Bytes: n}, nil
}

// Write builds the manifest of dir and writes it as dir/manifest.json. It
// refuses to replace an existing manifest: rewriting it would bless
// whatever was changed since the run.
func Write(dir, version, sku string) (*Manifest, error) {
	m, err := Build(dir, version, sku)
	if err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("write manifest: %w", err)
	}
	f, err := safefs.CreateNew(dir, File, 0o644)
	if err != nil {
		return nil, fmt.Errorf("write manifest: %w", err)
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return nil, fmt.Errorf("write manifest %s: %w", f.Name(), err)
	}
	return m, f.Close()
}

// maxManifest bounds the manifest read: a million files' entries.
const maxManifest = 256 << 20

// Read reads dir/manifest.json. Errors name the file.
func Read(dir string) (*Manifest, error) {
	p := filepath.Join(dir, File)
	data, err := safefs.ReadFile(dir, File, maxManifest)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", p, err)
	}
	return &m, nil
}

// Sum is the hex SHA-256 of dir/manifest.json itself, the one number to
// publish or sign with a sign-off.
func Sum(dir string) (string, error) {
	data, err := safefs.ReadFile(dir, File, maxManifest)
	if err != nil {
		return "", fmt.Errorf("hash manifest: %w", err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:]), nil
}

// Problem is a file that does not match the manifest.
type Problem struct {
	// Path is relative to the results folder.
	Path string
	// What happened: "edited since the run (SHA-256 differs)", "missing",
	// "added since the run (not in the manifest)".
	What string
}

// String renders the problem as "path: what".
func (p Problem) String() string { return p.Path + ": " + p.What }

// Check compares the covered files of dir with manifest m, returning one
// Problem per file edited, missing or added, sorted by path.
func Check(dir string, m *Manifest) ([]Problem, error) {
	now, err := Build(dir, m.Version, m.SKU)
	if err != nil {
		return nil, err
	}
	have := map[string]Entry{}
	for _, e := range now.Files {
		have[e.Path] = e
	}
	var out []Problem
	listed := map[string]bool{}
	for _, e := range m.Files {
		listed[e.Path] = true
		h, ok := have[e.Path]
		switch {
		case !ok:
			out = append(out, Problem{e.Path, "missing"})
		case h.SHA256 != e.SHA256:
			out = append(out, Problem{e.Path, fmt.Sprintf("edited since the run (SHA-256 %s, manifest says %s)", short(h.SHA256), short(e.SHA256))})
		}
	}
	for _, e := range now.Files {
		if !listed[e.Path] {
			out = append(out, Problem{e.Path, "added since the run (not in the manifest)"})
		}
	}
	if m.Baseline == nil {
		out = append(out, Problem{journal.BaselineDir + "/" + m.SKU + ".yaml", "the manifest names no baseline file"})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "..."
	}
	return h
}
