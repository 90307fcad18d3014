// Package resultsdir owns the layout of a results folder, the folder a run
// or a check writes and a customer receives (its names, every one, are in
// its leaf package layout, which the packages resultsdir imports use too):
//
//	manifest.json[.sig]      what every file hashes to (framework/manifest)
//	journal.jsonl            the run, one finished test per line (framework/journal)
//	baseline/SKU.yaml        the SKU file the run was judged against
//	raw/TEST/                one test's raw outputs (TestDir): STEP.log, STEP.files/,
//	                         outputs.json (how each step ended)
//	raw/TEST.attempt-N/      an earlier attempt of a retried test (AttemptDir)
//	raw/TEST.N/              the Nth of several runs given to check (CheckDir)
//	localise/...             the results folders of a localisation's runs
//	hardware.json            the GPUs and NICs the raw outputs show, per host
//	results.json, junit.xml, report.html, summary.md, table.txt
//	                         the reports (framework/report renders them)
//
// Every package that names one of these takes the name from layout; this
// package reads the folders of raw/ back typed (Walk), reads a folder back
// (Load, KeptBaseline, ReadOutputs) and checks that a test's raw outputs
// lie where its name puts them (RawFolder).
package resultsdir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/plan"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
	"github.com/gpuaccept/gpuaccept/framework/strictjson"
)

// HardwareList is the content of hardware.json.
type HardwareList struct {
	// Devices are the GPUs and NICs, sorted by host, kind and bus id
	// (result.MergeHardware).
	Devices []result.Device `json:"devices"`
}

// WriteHardware writes hardware.json into the results folder dir through
// safefs (a link or special file at the name is refused). Errors name the
// file.
func WriteHardware(dir string, devices []result.Device) error {
	if devices == nil {
		devices = []result.Device{}
	}
	data, err := json.MarshalIndent(HardwareList{Devices: devices}, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, layout.Hardware), err)
	}
	if err := safefs.WriteFile(dir, layout.Hardware, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write hardware list: %w", err)
	}
	return nil
}

// ReadHardware reads the hardware.json of the results folder dir: ok is
// false (and err nil) when the folder has none; err names the file that
// does not read as one (one JSON document, DecodeOne).
func ReadHardware(dir string) (devices []result.Device, ok bool, err error) {
	data, err := safefs.ReadFile(dir, layout.Hardware, maxResults)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("read hardware list: %w", err)
	}
	var l HardwareList
	if err := DecodeOne(data, &l); err != nil {
		return nil, true, fmt.Errorf("read %s: %w", filepath.Join(dir, layout.Hardware), err)
	}
	return l.Devices, true, nil
}

// TestDir is the raw folder of test, relative to the results folder:
// raw/TEST.
func TestDir(test string) string { return filepath.Join(layout.Raw, test) }

// AttemptDir is the raw folder of an earlier attempt (1-based) of a
// retried test, relative to the results folder: raw/TEST.attempt-N.
func AttemptDir(test string, attempt int) string {
	return filepath.Join(layout.Raw, test+layout.AttemptSep+strconv.Itoa(attempt))
}

// CheckDir is the raw folder of the nth (1-based) of runs runs of test
// given to check, relative to the results folder: raw/TEST with one run,
// raw/TEST.N with several.
func CheckDir(test string, n, runs int) string {
	if runs > 1 {
		return filepath.Join(layout.Raw, fmt.Sprintf("%s.%d", test, n))
	}
	return TestDir(test)
}

// RawFolder is the name of the folder under raw/ that holds test t's
// outputs (t.Raw, paths relative to the results folder), which must be
// one its name gives: TestDir, AttemptDir or CheckDir of the test (a
// check run "TEST[FILE]" is of TEST), with every raw path of t in it. The
// error names the path that is not. t.Raw must not be empty.
func RawFolder(t result.Test) (string, error) {
	if len(t.Raw) == 0 {
		return "", errors.New("no raw outputs kept")
	}
	first := filepath.ToSlash(t.Raw[0])
	parts := strings.Split(first, "/")
	if len(parts) < 3 || parts[0] != layout.Raw || parts[1] == "." || parts[1] == ".." {
		return "", fmt.Errorf("raw output %s is not under %s/TEST/", first, layout.Raw)
	}
	folder := parts[1]
	base, _, _ := strings.Cut(t.Name, "[")
	ok := folder == base
	if rest, found := strings.CutPrefix(folder, base+"."); found && !ok {
		n := strings.TrimPrefix(rest, strings.TrimPrefix(layout.AttemptSep, "."))
		ok = number(n) >= 0
	}
	if !ok {
		return "", fmt.Errorf("raw output %s is not in the folder of test %s (%s/%s/)", first, t.Name, layout.Raw, base)
	}
	for _, p := range t.Raw[1:] {
		if !strings.HasPrefix(filepath.ToSlash(p), layout.Raw+"/"+folder+"/") {
			return "", fmt.Errorf("raw outputs %s and %s are in different folders", first, p)
		}
	}
	return folder, nil
}

// number is s as a number of decimal digits only (no sign), -1 when it
// is not one or is too large.
func number(s string) int {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// Folder is one folder under a results folder's raw/, read from its name:
// the outputs of a test (raw/TEST), of an earlier attempt of a retried test
// (raw/TEST.attempt-N, AttemptDir), or of the Nth of several runs given to
// check (raw/TEST.N, CheckDir).
type Folder struct {
	// Name is the folder's name under raw/.
	Name string
	// Test is the test whose outputs it holds: PLUGIN.TEST.
	Test string
	// Attempt is the number (1-based) of an earlier attempt of a retried
	// test; 0 for the outputs a verdict stands on.
	Attempt int
	// Run is N of raw/TEST.N, the Nth (1-based) of several runs given to
	// check; 0 otherwise.
	Run int
}

// ParseFolder reads the name of a folder under raw/. A test is named
// PLUGIN.TEST, so a name without a dot, a step's files (STEP.files) or a
// name that ends in a dot is no test's: ok is false. The name alone cannot
// tell a test whose last part is a number from a run of check (TEST.N);
// it is read as the run, as check writes it (RawFolder holds a folder to a
// test it knows).
func ParseFolder(name string) (f Folder, ok bool) {
	if strings.HasSuffix(name, layout.FilesExt) || strings.HasSuffix(name, ".") || name == "." || name == ".." {
		return Folder{}, false
	}
	f = Folder{Name: name, Test: name}
	if test, n, found := strings.Cut(name, layout.AttemptSep); found {
		if a := number(n); a > 0 {
			f.Test, f.Attempt = test, a
		}
	} else if i := strings.LastIndexByte(name, '.'); i > 0 {
		if r := number(name[i+1:]); r > 0 && strings.Contains(name[:i], ".") {
			f.Test, f.Run = name[:i], r
		}
	}
	if !strings.Contains(f.Test, ".") || strings.HasPrefix(f.Test, ".") {
		return Folder{}, false
	}
	return f, true
}

// Walk lists the folders of raw, a results folder's raw/ (or a folder laid
// out as one), that hold a test's outputs (ParseFolder), sorted by name;
// what else lies there is skipped (files, folders that name no test).
// Errors name the folder that could not be read.
func Walk(raw string) ([]Folder, error) {
	ents, err := os.ReadDir(raw)
	if err != nil {
		return nil, fmt.Errorf("read the raw outputs: %w", err)
	}
	var out []Folder
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if f, ok := ParseFolder(e.Name()); ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// maxOutputs bounds an outputs.json read back: a step record is a few
// hundred bytes.
const maxOutputs = 16 << 20

// ReadOutputs reads the outputs.json of raw folder folder (RawFolder's
// name) of the results folder root, through safefs (no link, no special
// file), paths as recorded (relative to the test's folder). Errors name
// the file.
func ReadOutputs(root, folder string) ([]plan.Output, error) {
	rel := path.Join(layout.Raw, folder, layout.Outputs)
	data, err := safefs.ReadFile(root, rel, maxOutputs)
	if err != nil {
		return nil, fmt.Errorf("read how the steps ended: %w", err)
	}
	var outs []plan.Output
	if err := json.Unmarshal(data, &outs); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(root, rel), err)
	}
	return outs, nil
}

// ReadOutputsBeside reads the outputs.json in the folder of log (a log
// given to check, which may lie in a results folder's raw/TEST/): how its
// steps ended, if that folder records it. Only a regular file is read,
// not a link (found by gpuaccept, not named by the user, it could lead out
// of the folder), nor a FIFO or device; ok is false when there is none or
// it does not read as one.
func ReadOutputsBeside(log string) (outs []plan.Output, ok bool) {
	data, err := safefs.ReadFile(filepath.Dir(log), layout.Outputs, maxOutputs)
	if err != nil {
		return nil, false
	}
	if json.Unmarshal(data, &outs) != nil {
		return nil, false
	}
	return outs, true
}

// maxResults bounds a results.json read back (a run of many tests with
// every point makes tens of MB).
const maxResults = 1 << 30

// Load reads the run a results folder holds: from its journal, which has
// every test that finished even when the run was stopped, else from
// results.json (folders of gpuaccept check --out made before check kept a
// journal; one JSON document, DecodeOne). Either way the run's status is
// recomputed from its tests (result.Run.Finish), never the one stored.
// The run's Dir is dir; recorded is the results folder the run recorded
// (results_dir), which its results.json shows, or dir when it recorded
// none.
func Load(dir string) (run *result.Run, recorded string, err error) {
	run, err = journal.Read(dir)
	if errors.Is(err, iofs.ErrNotExist) {
		p := filepath.Join(dir, layout.Results)
		data, rerr := safefs.ReadFile(dir, layout.Results, maxResults)
		if rerr != nil {
			return nil, "", fmt.Errorf("results folder %s has neither %s nor a readable %s (%v)", dir, layout.Journal, layout.Results, rerr)
		}
		run = &result.Run{}
		if err := DecodeOne(data, run); err != nil {
			return nil, "", fmt.Errorf("read %s: %w", p, err)
		}
		// The status stored is a report's word: the tests are the
		// evidence, and the run's verdict is theirs (a "pass" over failed
		// tests must not print PASS nor exit 0).
		run.Finish()
	} else if err != nil {
		return nil, "", err
	}
	recorded = run.Dir
	if recorded == "" {
		recorded = dir
	}
	run.Dir = dir
	return run, recorded, nil
}

// LoadFolder is Load of a folder handed over to be reported on or
// checked: dir must be a folder, and the run's raw outputs (those of
// every test and attempt) regular files inside dir reached through no
// link (RawInFolder).
func LoadFolder(dir string) (run *result.Run, recorded string, err error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, "", fmt.Errorf("results folder %s: not a folder", dir)
	}
	if run, recorded, err = Load(dir); err != nil {
		return nil, "", err
	}
	if err := RawInFolder(dir, run); err != nil {
		return nil, "", err
	}
	return run, recorded, nil
}

// RawInFolder refuses a run whose raw outputs (those of every test and
// attempt) are not all regular files inside dir reached through no link:
// report quotes them and verify re-parses them, so a FIFO would hang them
// and a link out of the folder would quote or judge what is elsewhere. A
// raw output that is missing is left to the reports (and the manifest).
// The error names the test.
func RawInFolder(dir string, run *result.Run) error {
	var tests []result.Test
	for _, t := range run.Tests {
		tests = append(append(tests, t.Attempts...), t)
	}
	for _, t := range tests {
		for _, r := range t.Raw {
			if err := safefs.Check(dir, r); err != nil && !errors.Is(err, iofs.ErrNotExist) {
				return fmt.Errorf("raw output of %s: %w", t.Name, err)
			}
		}
	}
	return nil
}

// DecodeOne decodes data, one JSON document, into v: a second document
// after it (a results.json with another run appended, which a reader
// taking the first or the last would see differently) is an error, as is
// anything but white space after it, and so is a key an object gives
// twice (strictjson.DuplicateKey: Go keeps the last value, other readers
// the first).
func DecodeOne(data []byte, v any) error {
	if err := strictjson.DuplicateKey(data); errors.Is(err, strictjson.ErrDuplicateKey) {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("more than one JSON document: something follows the first, at byte %d", end)
	}
	return nil
}

// CheckResults reads the results.json of the results folder dir, if it
// has one, and refuses a key an object gives twice
// (strictjson.DuplicateKey): malformed input, which readers read
// differently. The error names the file and the key; a folder without
// results.json (its journal is the run) is no error.
func CheckResults(dir string) error {
	data, err := safefs.ReadFile(dir, layout.Results, maxResults)
	if errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// Other malformed JSON is verify's to name when it compares the file.
	if err := strictjson.DuplicateKey(data); errors.Is(err, strictjson.ErrDuplicateKey) {
		return fmt.Errorf("read %s: %w", filepath.Join(dir, layout.Results), err)
	}
	return nil
}

// KeptBaseline loads the copy of the SKU file name that the results folder
// dir keeps (baseline/NAME.yaml). Its File is that path relative to the
// folder, as the HTML report names it wherever the folder lies.
func KeptBaseline(dir, name string) (*sku.SKU, error) {
	cat, err := sku.Load(os.DirFS(filepath.Join(dir, layout.Baseline)), layout.Baseline)
	if err != nil {
		return nil, fmt.Errorf("baseline kept in the results folder: %w", err)
	}
	return cat.Get(name)
}
