package resultsdir

import (
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
)

// Stray is a file of a results folder that its layout does not define.
type Stray struct {
	// Path is relative to the results folder, with forward slashes.
	Path string
	// LooksLike is the name of the layout it reads as, once case, Unicode
	// compatibility forms (NFKC) and invisible format characters are
	// folded away ("Report.html", "results.json\u200b"); "" when none.
	LooksLike string
	// Defined says the layout defines Path too: two of its names look
	// alike (raw outputs A.log and a.log).
	Defined bool
}

// Strays returns the files among files (paths relative to the results
// folder root, forward slashes: a manifest's list) that the layout of a
// results folder does not define, sorted. runs holds the run of each
// results folder in it by its path ("" for root, a localisation's runs
// under localise/); a nil run is one whose journal could not be read, and
// its files are not judged. A results folder defines: its journal, the
// reports (Reports), baseline/SKU.yaml of its run's SKU, and in each
// raw folder a test or attempt of its run claims (RawFolder): the raw
// outputs the journal names (Test.Raw), outputs.json and what it names
// (logs and collected files), and with launcher slurm the files slurm
// keeps; a nested one its manifest and signature too. Files in a raw
// folder no test claims are left out: the folder is named elsewhere.
// A file defined by none that folds to a defined name (Stray.LooksLike)
// is a look-alike; so is a defined name that folds to another.
func Strays(root string, files []string, runs map[string]*result.Run) []Stray {
	defined := map[string]bool{}
	unjudged := map[string]bool{} // raw folders no test claims, unread runs
	for rel, run := range runs {
		p := ""
		if rel != "" {
			p = rel + "/"
			defined[p+layout.Manifest], defined[p+layout.SigFile] = true, true
		}
		if run == nil {
			unjudged[rel] = true
			continue
		}
		defined[p+layout.Journal] = true
		// Written at sign-off beside the reports; verify re-derives it
		// from raw/ (ReadHardware).
		defined[p+layout.Hardware] = true
		for _, r := range layout.Reports {
			defined[p+r] = true
		}
		defined[p+layout.Baseline+"/"+run.SKU+".yaml"] = true
		for _, f := range rawDefined(filepath.Join(root, filepath.FromSlash(rel)), run) {
			defined[p+f] = true
		}
	}
	folded := map[string]string{}
	for f := range defined {
		if g, ok := folded[Fold(f)]; !ok || f < g {
			folded[Fold(f)] = f
		}
	}
	var out []Stray
	for _, f := range files {
		like := folded[Fold(f)]
		if like == f {
			like = ""
		}
		if defined[f] && like == "" {
			continue
		}
		if !defined[f] && unclaimed(f, runs, unjudged) {
			continue
		}
		out = append(out, Stray{Path: f, LooksLike: like, Defined: defined[f]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// rawDefined lists the files of the raw folders of run (in the results
// folder dir) that the layout defines, relative to dir.
func rawDefined(dir string, run *result.Run) []string {
	var out []string
	for _, t := range run.Tests {
		for _, a := range append(append([]result.Test(nil), t.Attempts...), t) {
			if len(a.Raw) == 0 {
				continue
			}
			folder, err := RawFolder(a)
			if err != nil {
				continue
			}
			for _, r := range a.Raw {
				out = append(out, path.Clean(filepath.ToSlash(r)))
			}
			in := layout.Raw + "/" + folder + "/"
			out = append(out, in+layout.Outputs)
			outs, err := ReadOutputs(dir, folder)
			if err != nil {
				continue // re-judging names it
			}
			if run.Launcher == "slurm" {
				out = append(out, in+layout.SlurmJobScript, in+layout.SlurmJobOutput)
			}
			for _, o := range outs {
				names := []string{o.Log}
				for _, f := range o.Files {
					names = append(names, f)
				}
				if run.Launcher == "slurm" {
					names = append(names, o.Step+layout.SlurmRanksExt)
				}
				for _, n := range names {
					if n != "" && filepath.IsLocal(n) {
						out = append(out, in+path.Clean(filepath.ToSlash(n)))
					}
				}
			}
		}
	}
	return out
}

// unclaimed says f lies in a raw folder no test of its results folder
// claims, or in a results folder whose run was not read (unjudged): such
// a folder is named as a whole elsewhere.
func unclaimed(f string, runs map[string]*result.Run, unjudged map[string]bool) bool {
	rel := ""
	for r := range runs {
		if r != "" && strings.HasPrefix(f, r+"/") && len(r) > len(rel) {
			rel = r
		}
	}
	if unjudged[rel] {
		return true
	}
	rest := strings.TrimPrefix(f, rel+"/")
	if rel == "" {
		rest = f
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 3 || parts[0] != layout.Raw {
		return false
	}
	run := runs[rel]
	for _, t := range run.Tests {
		for _, a := range append(append([]result.Test(nil), t.Attempts...), t) {
			if len(a.Raw) > 0 {
				if folder, err := RawFolder(a); err == nil && folder == parts[1] {
					return false
				}
			}
		}
	}
	return true
}

// Fold is name as a reader may take it: NFKC-normalised (fullwidth and
// other compatibility forms as their plain letters), case-folded, with
// the invisible format characters (Unicode Cf: zero-width spaces and
// joiners, bidi marks, soft hyphen) and other controls removed. Two names
// of a results folder that fold alike look alike.
func Fold(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) || unicode.IsControl(r) {
			return -1
		}
		return r
	}, norm.NFKC.String(name))
	return norm.NFKC.String(strings.ToLower(name))
}
