// Package manifest is a results folder's sign-off record: manifest.json
// lists the SHA-256 of every file in the folder (raw outputs, the copy of
// the baseline file that judged the run, the journal of verdicts, every
// report, the results folders of a localisation's runs) with the gpuaccept
// version. Check finds every file edited, removed or added since, naming
// it, and refuses links, pipes and devices by name, so a customer can
// check a vendor's sign-off without rerunning anything (gpuaccept verify
// also re-judges the raw outputs and re-derives the reports).
//
// The manifest does not protect itself: its own SHA-256 (Digest) is the
// sign-off digest to publish alongside the folder, and Sign signs it with
// the operator's ssh key (manifest.json.sig, SSHSIG) for ssh-keygen -Y
// verify.
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
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/strictjson"
)

// Format is the manifest format this package writes: 2 lists every file
// of the folder. Manifests without a format field (format 1, gpuaccept
// before 2026-12) list only the raw outputs, baseline copies and
// journals (LegacyCovered).
const Format = 2

// LegacyCovered are the parts of a results folder (and of every results
// folder nested in it, see SubRuns) a format 1 manifest hashes.
var LegacyCovered = []string{layout.Raw, layout.Baseline, layout.Journal}

// LegacyReports are the reports a format 1 manifest leaves out, in the
// results folder and in each one nested in it: Check does not call them
// added (gpuaccept verify re-derives them instead). They are the names
// framework/report writes.
var LegacyReports = layout.Reports

// maxManifest bounds the manifest and signature read back (a folder of
// 100k files makes a manifest of ~20 MB).
const maxManifest = 256 << 20

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
		if p != dir && (d.Name() == layout.Raw || d.Name() == layout.Baseline) {
			if _, err := os.Lstat(filepath.Join(filepath.Dir(p), layout.Journal)); err == nil {
				return fs.SkipDir // a results folder's own outputs
			}
		}
		if p == dir {
			return nil
		}
		if _, err := os.Lstat(filepath.Join(p, layout.Journal)); err == nil {
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
	// Format is 2 (Format) for a manifest of every file; 0 for format 1.
	Format int `json:"format,omitempty"`
	// Version is the gpuaccept version that made the run.
	Version string    `json:"gpuaccept_version"`
	SKU     string    `json:"sku"`
	Created time.Time `json:"created"`
	// Baseline is the copy of the SKU file the run was judged against.
	Baseline *Entry `json:"baseline,omitempty"`
	// Files are every covered file (the baseline included), sorted by path.
	Files []Entry `json:"files"`
}

// Legacy says m is a format 1 manifest: it lists raw outputs, baseline
// copies and journals only, not the reports.
func (m *Manifest) Legacy() bool { return m.Format < 2 }

// Problem is a file that does not match the manifest.
type Problem struct {
	// Path is relative to the results folder.
	Path string
	// What happened: "edited since the run (SHA-256 differs)", "missing",
	// "added since the run (not in the manifest)", "not a regular file: a
	// symbolic link" (safefs.Kind).
	What string
}

// String renders the problem as "path: what".
func (p Problem) String() string { return p.Path + ": " + p.What }

// scan hashes every regular file under dir but the manifest and its
// signature, sorted by path; entries that are neither files nor folders
// (links, pipes, devices, sockets) come back as problems, never opened.
func scan(dir string) ([]Entry, []Problem, error) {
	root, err := filepath.EvalSymlinks(dir) // the folder named may be a link; nothing in it may
	if err != nil {
		return nil, nil, fmt.Errorf("read results folder %s: %w", dir, err)
	}
	files := []Entry{}
	var odd []Problem
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == "." || d.IsDir():
			return nil
		case rel == layout.Manifest || rel == layout.SigFile:
			if d.Type().IsRegular() {
				return nil
			}
		}
		if !d.Type().IsRegular() {
			odd = append(odd, Problem{rel, "not a regular file: " + safefs.Kind(d.Type())})
			return nil
		}
		e, err := hashFile(root, rel)
		if err != nil {
			return err
		}
		e.Path = rel
		files = append(files, e)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("hash the files of %s: %w", dir, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, odd, nil
}

// hashFile hashes root/rel, a regular file reached through no link
// (safefs): a FIFO does not block and a link is not followed.
func hashFile(root, rel string) (Entry, error) {
	f, err := safefs.Open(root, rel)
	if err != nil {
		return Entry{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return Entry{}, fmt.Errorf("hash %s: %w", f.Name(), err)
	}
	return Entry{SHA256: hex.EncodeToString(h.Sum(nil)), Bytes: n}, nil
}

// Build hashes every file of the results folder dir (format 2). Errors
// name a file that cannot be read, or the first link, pipe or device in
// the folder: nothing but files is signed off.
func Build(dir, version, sku string) (*Manifest, error) {
	files, odd, err := scan(dir)
	if err != nil {
		return nil, fmt.Errorf("build manifest: %w", err)
	}
	if len(odd) > 0 {
		return nil, fmt.Errorf("build manifest of %s: %w", dir, safefs.Check(dir, odd[0].Path))
	}
	m := &Manifest{Format: Format, Version: version, SKU: sku, Created: time.Now().UTC(), Files: files}
	m.Baseline = m.find(layout.Baseline + "/" + sku + ".yaml")
	return m, nil
}

func (m *Manifest) find(p string) *Entry {
	for i := range m.Files {
		if m.Files[i].Path == p {
			e := m.Files[i]
			return &e
		}
	}
	return nil
}

// Write builds the manifest of dir and writes it as dir/manifest.json. It
// refuses to replace an existing manifest: rewriting it would bless
// whatever was changed since the run.
func Write(dir, version, sku string) (*Manifest, error) {
	return WriteWith(dir, version, sku, "")
}

// WriteWith is Write for a folder whose baseline copy lies elsewhere
// than baseline/SKU.yaml: baseline is its path in dir (a burn-in's, its
// first cycle's copy); "" is the default.
func WriteWith(dir, version, sku, baseline string) (*Manifest, error) {
	m, err := Build(dir, version, sku)
	if err != nil {
		return nil, err
	}
	if baseline != "" {
		m.Baseline = m.find(baseline)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("write manifest: %w", err)
	}
	if err := writeNew(filepath.Join(dir, layout.Manifest), append(data, '\n')); err != nil {
		return nil, fmt.Errorf("write manifest: %w", err)
	}
	return m, nil
}

// writeNew writes data as the new file p, refusing to replace anything
// there (a file or a link). Every file this package writes goes through
// it.
func writeNew(p string, data []byte) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	return f.Close()
}

// Read reads dir/manifest.json. Errors name the file.
func Read(dir string) (*Manifest, error) {
	p := filepath.Join(dir, layout.Manifest)
	data, err := safefs.ReadFile(dir, layout.Manifest, maxManifest)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	var m Manifest
	if err := strictjson.DuplicateKey(data); errors.Is(err, strictjson.ErrDuplicateKey) {
		return nil, fmt.Errorf("read manifest %s: %w", p, err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", p, err)
	}
	if m.Format > Format {
		return nil, fmt.Errorf("read manifest %s: format %d is newer than this gpuaccept reads (%d); verify with the gpuaccept that made it", p, m.Format, Format)
	}
	return &m, nil
}

// Sum is the hex SHA-256 of dir/manifest.json itself.
func Sum(dir string) (string, error) {
	data, err := safefs.ReadFile(dir, layout.Manifest, maxManifest)
	if err != nil {
		return "", fmt.Errorf("hash manifest: %w", err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:]), nil
}

// Digest is the sign-off digest of the results folder dir, the one number
// to publish with a sign-off: "sha256:" and the hex SHA-256 of
// dir/manifest.json, which lists the SHA-256 of every other file.
func Digest(dir string) (string, error) {
	s, err := Sum(dir)
	if err != nil {
		return "", err
	}
	return "sha256:" + s, nil
}

// ParseDigest reads a sign-off digest as printed ("sha256:HEX") or as the
// bare 64 hex digits, in either case, and returns the hex in lower case.
func ParseDigest(s string) (string, error) {
	d := strings.ToLower(strings.TrimSpace(s))
	if d == "" {
		return "", errors.New("digest is empty: want sha256: and 64 hex digits, as printed at sign-off")
	}
	if algo, rest, ok := strings.Cut(d, ":"); ok {
		if algo != "sha256" {
			return "", fmt.Errorf("digest %q: want sha256: and 64 hex digits, as printed at sign-off", cut(s, 80))
		}
		d = rest
	}
	if _, err := hex.DecodeString(d); err != nil || len(d) != 2*sha256.Size {
		return "", fmt.Errorf("digest %q: want sha256: and 64 hex digits, as printed at sign-off", cut(s, 80))
	}
	return d, nil
}

// Check compares the files of dir with manifest m, returning one Problem
// per file edited, missing or added and per link, pipe or device, sorted
// by path. For a format 1 manifest (Legacy) the reports it never listed
// (LegacyReports of dir and of its sub-runs) are passed over.
func Check(dir string, m *Manifest) ([]Problem, error) {
	now, odd, err := scan(dir)
	if err != nil {
		return nil, err
	}
	unlisted := func(string) bool { return false }
	if m.Legacy() {
		subs, err := SubRuns(dir)
		if err != nil {
			return nil, err
		}
		folders := map[string]bool{".": true}
		for _, s := range subs {
			folders[s] = true
		}
		reports := map[string]bool{}
		for _, r := range LegacyReports {
			reports[r] = true
		}
		unlisted = func(p string) bool { return folders[path.Dir(p)] && reports[path.Base(p)] }
	}
	have := map[string]Entry{}
	for _, e := range now {
		have[e.Path] = e
	}
	strange := map[string]bool{}
	out := odd
	for _, o := range odd {
		strange[o.Path] = true
	}
	listed := map[string]bool{}
	for _, e := range m.Files {
		listed[e.Path] = true
		h, ok := have[e.Path]
		switch {
		case strange[e.Path]:
		case !ok:
			out = append(out, Problem{e.Path, "missing"})
		case h.SHA256 != e.SHA256:
			out = append(out, Problem{e.Path, fmt.Sprintf("edited since the run (SHA-256 %s, manifest says %s)", short(h.SHA256), short(e.SHA256))})
		}
	}
	for _, e := range now {
		if !listed[e.Path] && !unlisted(e.Path) {
			out = append(out, Problem{e.Path, "added since the run (not in the manifest)"})
		}
	}
	if m.Baseline == nil {
		out = append(out, Problem{layout.Baseline + "/" + m.SKU + ".yaml", "the manifest names no baseline file"})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func cut(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "..."
	}
	return h
}
