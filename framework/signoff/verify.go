package signoff

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuaccept/gpuaccept/framework/journal"
	"github.com/gpuaccept/gpuaccept/framework/localise"
	"github.com/gpuaccept/gpuaccept/framework/manifest"
	"github.com/gpuaccept/gpuaccept/framework/record"
	"github.com/gpuaccept/gpuaccept/framework/redact"
	"github.com/gpuaccept/gpuaccept/framework/result"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir"
	"github.com/gpuaccept/gpuaccept/framework/resultsdir/layout"
	"github.com/gpuaccept/gpuaccept/framework/runner"
	"github.com/gpuaccept/gpuaccept/framework/safefs"
	"github.com/gpuaccept/gpuaccept/framework/sku"
)

// Kinds of the lines Verify reports.
const (
	// Mismatch: a file that is not what the manifest, the sign-off digest
	// or signature, or the re-derivation says.
	Mismatch = "MISMATCH"
	// Rejudged: a verdict or number the raw outputs, judged again, do not
	// give.
	Rejudged = "REJUDGED"
	// Note: what was not checked, and why; no finding.
	Note = "NOTE"
)

// Line is one line of Verify's account: Kind is Mismatch, Rejudged, Note
// or "" (what was checked).
type Line struct {
	Kind, Text string
}

// String renders the line as verify prints it: "KIND text", or the text.
func (l Line) String() string {
	if l.Kind == "" {
		return l.Text
	}
	return l.Kind + " " + l.Text
}

// Options are what Verify checks a results folder against.
type Options struct {
	// Plugins parse the raw outputs again.
	Plugins runner.Plugins
	// Version is this gpuaccept's version: reports of a folder whose
	// manifest names the same one are compared byte for byte.
	Version string
	// Digest is the sign-off digest printed at sign-off, as hex
	// (manifest.ParseDigest); "" checks none.
	Digest string
	// Builtin holds this gpuaccept's own SKU files (baselines.FS): the
	// kept baseline copy is compared with the one of the same name, and
	// the raw outputs are judged against it too when they differ, so that
	// a run judged against a site's own (laxer) bands is told apart from
	// one judged against the built-in ones. nil compares nothing.
	Builtin iofs.FS
	// StrictBaseline makes a kept copy that is not the built-in SKU file
	// a finding instead of a note.
	StrictBaseline bool
	// Recordings are the real outputs this gpuaccept ships (the root
	// package's Recordings, which the demo replays): raw outputs that are
	// byte for byte one of them are no evidence of the cluster a run
	// names, unless the run says it is a replay. nil checks none.
	Recordings iofs.FS
	// AllowedSigners and Identity check manifest.json.sig as ssh-keygen
	// -Y verify -f ALLOWED_SIGNERS -I IDENTITY -n gpuaccept does; ""
	// checks none.
	AllowedSigners, Identity string
}

// Signers sets what verify checks the manifest against from its flags:
// digest (--digest, "" for none) parsed into Digest, allowed and identity
// (--allowed-signers, --identity), which go together. empty names the
// flags given with an empty value (--digest "$D" with D unset), refused:
// they would check nothing and still say OK. Errors name the flag.
func (o *Options) Signers(digest, allowed, identity string, empty []string) error {
	if digest != "" {
		d, err := manifest.ParseDigest(digest)
		if err != nil {
			return fmt.Errorf("--digest: %w", err)
		}
		o.Digest = d
	}
	if len(empty) > 0 {
		return fmt.Errorf("--%s is empty: give a value or leave the flag out", empty[0])
	}
	if (allowed == "") != (identity == "") {
		return errors.New("--allowed-signers and --identity go together: the file of allowed signers, and whose signature it must be")
	}
	o.AllowedSigners, o.Identity = allowed, identity
	return nil
}

// Result is what Verify found.
type Result struct {
	Manifest *manifest.Manifest
	// Sum is the hex SHA-256 of manifest.json.
	Sum string
	// Run is the run the folder holds, read from its journal.
	Run *result.Run
	// Lines are the account, in order.
	Lines []Line
	// Findings counts the Mismatch and Rejudged lines.
	Findings int
	// Rerendered are the reports of the folder found byte for byte as
	// they render again; Rederived is results.json when it matched value
	// by value.
	Rerendered, Rederived []string
	// SubRuns is how many results folders of localisation runs were
	// checked, of Localisations localisations.
	SubRuns, Localisations int
	// Baseline says how the kept baseline copy compares with this
	// gpuaccept's built-in SKU file of that name: BaselineBuiltin,
	// BaselineSite, BaselineOwn, or "" when not compared.
	Baseline string
	// Replay says the raw outputs are the recordings this gpuaccept ships
	// and the run says it is a replay of them (the demo): no sign-off of
	// hardware.
	Replay bool
	// Digest says the sign-off digest was checked and matched; Signer who
	// signed, when the signature was checked and is good.
	Digest bool
	Signer *manifest.Signer

	// judge judges test t of the run again against s, as Rejudge does
	// (nil: no re-judging, no baseline copy read).
	judge func(s *sku.SKU, t result.Test) (result.Test, error)
	// prefix heads every line added: the folder of the localisation's
	// run being checked, "" for the main one.
	prefix string
}

// add appends a line of the account. Every line is one line of text as
// a terminal shows it (redact.PrintableLine): a file name or a message
// with a line feed or an escape sequence in it (a file added after the
// run named "x\nverify: OK ...") can start no line of its own.
func (r *Result) add(kind, format string, a ...any) {
	r.Lines = append(r.Lines, Line{kind, redact.PrintableLine(r.prefix + fmt.Sprintf(format, a...))})
	if kind == Mismatch || kind == Rejudged {
		r.Findings++
	}
}

// Verify checks the results folder dir without running anything: every
// file against manifest.json (edited, missing, added, links and pipes
// named), manifest.json against the sign-off digest and its signature
// when given, the raw outputs parsed and judged again against the kept
// baseline copy and compared with every recorded verdict and number, the
// runs of its localisations the same way, results.json compared value by
// value with the run re-derived from the journal, and junit.xml,
// report.html, summary.md and table.txt rendered again and compared byte
// for byte. The run's status is recomputed from its tests (Run.Finish),
// and what cannot be re-derived from the raw outputs and the SKU rules is
// a finding, not a note: no journal, a suite the kept copy (or the
// built-in SKU file) has not, a parameter whose verdict the suite's own
// would not give (a site parameter, sku.SuiteTest.SiteParams, is judged
// as it ran: a note), an error with no raw output, a raw folder no test
// claims, a localisation's figure or suspect its runs do not give, a
// report of another version whose verdicts differ, a format 1 manifest's
// report that does not render again, raw outputs that are the shipped
// recordings in a run that is no replay or check, a hardware list
// (hardware.json) other than the one the raw outputs give, a retried
// test's attempts other than the ones the journal recorded as each
// ended. Errors are a folder
// that cannot be read (no manifest, neither journal nor results.json);
// everything else is a line of the Result.
func Verify(ctx context.Context, dir string, o Options) (*Result, error) {
	m, err := manifest.Read(dir)
	if err != nil {
		return nil, err
	}
	sum, err := manifest.Sum(dir)
	if err != nil {
		return nil, err
	}
	r := &Result{Manifest: m, Sum: sum}
	format := fmt.Sprintf("format %d", m.Format)
	if m.Legacy() {
		format = "format 1: raw outputs, baseline copy and journal only"
	}
	r.add("", "manifest %s: sha256 %s, made by gpuaccept %s (this is %s), SKU %s, %d files, %s", dir, sum, quoteVersion(m.Version), quoteVersion(o.Version), m.SKU, len(m.Files), format)
	r.checkSeal(dir, o)
	problems, err := manifest.Check(dir, m)
	if err != nil {
		return nil, err
	}
	for _, p := range problems {
		r.add(Mismatch, "%s", p)
	}
	run, recorded, err := resultsdir.Load(dir)
	if err != nil {
		return nil, err
	}
	r.Run = run
	// A results.json that readers read differently (a key given twice)
	// is malformed input, as a journal line with one is.
	if err := resultsdir.CheckResults(dir); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(filepath.Join(dir, layout.Journal)); errors.Is(err, iofs.ErrNotExist) {
		// results.json is a report of the run, rendered from the journal:
		// read back as the run, it would vouch for itself.
		r.add(Mismatch, "%s: missing: the run cannot be re-derived from %s, a report of it (every gpuaccept run and check --out keeps a journal)", layout.Journal, layout.Results)
	}
	// The run's verdict is its tests' and localisations', recomputed here
	// (as the journal reader does), never the status a file stores.
	run.Finish()
	if run.Version != m.Version {
		r.add(Mismatch, "%s says gpuaccept %s made the run, the journal says %s", layout.Manifest, quoteVersion(m.Version), quoteVersion(run.Version))
	}
	if run.SKU != m.SKU {
		r.add(Mismatch, "%s is of SKU %s, the journal of SKU %s", layout.Manifest, m.SKU, run.SKU)
	}
	s, err := resultsdir.KeptBaseline(dir, m.SKU)
	preflight := ""
	if err != nil {
		r.add(Mismatch, "%v", err)
	} else {
		judged := *run
		judged.Dir = recorded
		r.judge = func(s *sku.SKU, t result.Test) (result.Test, error) {
			return runner.JudgeAgain(ctx, o.Plugins, s, dir, &judged, t)
		}
		for _, d := range runner.Rejudge(ctx, o.Plugins, s, dir, &judged) {
			r.add(Rejudged, "%s", d)
		}
		var diffs []string
		preflight, diffs = runner.PreflightCheck(ctx, o.Plugins, s, dir, &judged)
		for _, d := range diffs {
			r.add(Rejudged, "%s", d)
		}
	}
	if s != nil {
		r.checkSuite(s, run, preflight)
	}
	if nj := run.NotJudgedText(); nj != "" {
		// The run's status is derived from its tests (the journal read
		// back, result.Run.Finish), never taken from the record: a
		// benchmark measured without a baseline entry signs nothing off.
		r.add(Note, "the run is not signed off (status %s): %s", run.Status, nj)
	}
	r.checkRawFolders(dir, "", run)
	r.checkLayout(dir, run, m)
	r.checkRecordings(o.Recordings, run, m)
	r.sayHardware(run)
	r.checkHardware(ctx, dir, o.Plugins, run)
	r.checkAttempts(run)
	if s != nil && o.Builtin != nil {
		r.checkBuiltin(ctx, dir, o, s, run, recorded)
	}
	same := !m.Legacy() && m.Version == o.Version
	r.Rederived, r.Rerendered = r.checkReports(dir, "", run, s, recorded, m, same, o.Version)
	if s != nil {
		r.verifySubRuns(ctx, o, s, dir, run, m, same)
	}
	r.Localisations = len(run.Localisations)
	return r, nil
}

// checkSeal checks manifest.json against the sign-off digest and its
// signature, as given, and says what was not checked.
func (r *Result) checkSeal(dir string, o Options) {
	if o.Digest != "" {
		if r.Sum != o.Digest {
			r.add(Mismatch, "%s: its digest is sha256:%s, not the sign-off digest sha256:%s (--digest): the manifest was made again or replaced since sign-off", layout.Manifest, r.Sum, o.Digest)
		} else {
			r.Digest = true
			r.add("", "sign-off digest sha256:%s matches --digest", o.Digest)
		}
	}
	if o.AllowedSigners != "" {
		signer, err := manifest.VerifySignature(dir, o.AllowedSigners, o.Identity)
		if err != nil {
			r.add(Mismatch, "%s: %v", layout.SigFile, err)
		} else {
			r.Signer = signer
			r.add("", "signature: %s is good for %s (%s %s, allowed signers %s line %d)", layout.SigFile, signer.Identity, signer.KeyType, signer.Fingerprint, o.AllowedSigners, signer.Line)
		}
	} else if _, err := os.Lstat(filepath.Join(dir, layout.SigFile)); err == nil {
		if typ, fp, err := manifest.ReadSignature(dir); err != nil {
			r.add(Note, "%s: %v", layout.SigFile, err)
		} else if err := manifest.SignatureMatches(dir); err != nil {
			// Who signed needs the allowed signers; that the manifest is
			// no longer what was signed needs only the key in the file.
			r.add(Mismatch, "%v", err)
		} else {
			r.add(Note, "%s: signed with %s %s, over this manifest.json; who holds that key is not checked: give --allowed-signers FILE --identity ID (or run ssh-keygen -Y verify)", layout.SigFile, typ, fp)
		}
	}
	if o.Digest == "" && o.AllowedSigners == "" {
		r.add(Note, "no --digest and no --allowed-signers: a manifest made again after the run cannot be told from the one signed off")
	}
}

// checkSuite holds the run's tests to its suite in the kept baseline s
// and the tests --test chose (run.Selected): a test dropped from the
// journal, its raw outputs deleted, leaves no verdict to re-judge, but
// the suite still names it. A skip with no raw output is the suite's, a
// dry run's, or, for a test that is no preflight test itself, the bad
// nodes' that the run's preflight tests found: preflight is that reason
// as their raw outputs, judged again, give it (runner.PreflightCheck; ""
// when they found none). A run of a suite s has not is a finding (a
// look-alike name is another name), and so is a test run with parameters
// its suite does not give (--param) whose verdict its suite's own would
// not give: the SKU rules do not give it. The suite test's site
// parameters (site_params: the NIC map) are the site's to set, and are
// judged as they ran. The folders of gpuaccept check (suite check, launcher check)
// are held to what check writes (checkCheck).
func (r *Result) checkSuite(s *sku.SKU, run *result.Run, preflight string) {
	if run.Suite == CheckSuite || run.Launcher == CheckSuite {
		r.checkCheck(s, run)
		return
	}
	su, ok := s.Suites[run.Suite]
	if !ok {
		r.add(Mismatch, "suite %s is not a suite of %s/%s.yaml: the run's tests cannot be held to the suite it names (a name that only looks like one is another name)", strconv.QuoteToASCII(run.Suite), layout.Baseline, s.Name)
		return
	}
	chosen := map[string]bool{}
	for _, n := range run.Selected {
		chosen[n] = true
	}
	have := map[string]bool{}
	for _, t := range run.Tests {
		have[t.Name] = true
	}
	inSuite := map[string]bool{}
	skipped := map[string]string{} // test -> the suite's reason to skip it
	suiteParams := map[string]map[string]string{}
	suiteTest := map[string]*sku.SuiteTest{}
	for _, st := range su.Tests {
		inSuite[st.Test] = true
		suiteTest[st.Test] = st
		skipped[st.Test] = st.SkipReason(run.Scope)
		suiteParams[st.Test] = runner.Params(su.Params, st.Params)
		if (len(chosen) == 0 || chosen[st.Test]) && !have[st.Test] {
			r.add(Mismatch, "%s: suite %s of %s/%s.yaml runs it, and no --test choice of the run leaves it out, but the run has no result for it", st.Test, run.Suite, layout.Baseline, s.Name)
		}
	}
	for _, t := range run.Tests {
		if !inSuite[t.Name] {
			r.add(Mismatch, "%s: the run has a result for it, but suite %s of %s/%s.yaml has no such test", t.Name, run.Suite, layout.Baseline, s.Name)
			continue
		}
		// Parameters the suite does not give (--param) are the operator's
		// to choose, but the SKU rules do not give the verdict they
		// make: a health check with xid_fatal=0 passes a node with XID
		// 79. checkParams judges again with the suite's own.
		for _, a := range append(append([]result.Test(nil), t.Attempts...), t) {
			if len(a.Raw) > 0 {
				r.checkParams(s, a, suiteParams[t.Name], suiteTest[t.Name], "suite "+run.Suite)
			}
		}
		r.checkAttemptFolders(t)
		if t.Status == result.Error && len(t.Raw) == 0 {
			r.add(Rejudged, "%s: recorded an error with no raw output (%s): there is nothing to re-derive its verdict from (a test that ran kept raw outputs, even when they failed it), so the run's verdict is not re-derived either", t.Name, cut(t.Message, 200))
		}
		// Every test of a run is judged at the run's scope: a forged
		// scope would turn min_gpus skips and bands of another scope on.
		if !t.Scope.IsZero() && t.Scope != run.Scope {
			r.add(Mismatch, "%s: judged at scope %s, but the run's scope is %s", t.Name, t.Scope, run.Scope)
		}
		// A skip that ran nothing is the suite's (skip: REASON, or
		// min_gpus above the run's scope) or a bad node's; any other test
		// that ran left raw outputs, whatever its verdict ("no baseline"
		// is judged from them). A dry run writes no results folder, so
		// its skip in one is forged.
		if t.Status != result.Skip || len(t.Raw) > 0 || (skipped[t.Name] != "" && skipped[t.Name] == t.Message) {
			continue
		}
		switch {
		case t.Message == "dry run":
			r.add(Mismatch, "%s: recorded as a dry run's skip, but a dry run writes no results folder", t.Name)
		case preflight != "" && t.Message == preflight && !t.Preflight:
		case strings.Contains(t.Message, " failed health: "):
			found := "find no node bad"
			if preflight != "" {
				found = "give: " + preflight
			}
			r.add(Mismatch, "%s: recorded a skip (%s) with no raw output, but the raw outputs of the run's preflight tests, judged again, %s", t.Name, t.Message, found)
		default:
			r.add(Mismatch, "%s: recorded a skip (%s) with no raw output, but suite %s of %s/%s.yaml runs it: only a test the suite skips runs nothing", t.Name, t.Message, run.Suite, layout.Baseline, s.Name)
		}
	}
	if len(run.Selected) > 0 {
		r.add(Note, "the run chose %d of suite %s's %s with --test: %s", len(run.Selected), run.Suite, result.Count(len(su.Tests), "test"), strings.Join(run.Selected, ", "))
	}
}

// sayHardware says which hosts and GPU models the raw outputs name (the
// tests' info, which re-judging holds to them), so that a customer can
// match them with the machines received; nothing when they name none.
func (r *Result) sayHardware(run *result.Run) {
	hosts, gpus := map[string]bool{}, map[string]bool{}
	for _, t := range run.Tests {
		for _, a := range append(append([]result.Test(nil), t.Attempts...), t) {
			if len(a.Raw) == 0 {
				continue
			}
			for _, h := range strings.Split(a.Info["hosts"], ",") {
				if h = strings.TrimSpace(h); h != "" {
					hosts[h] = true
				}
			}
			for _, hs := range a.RankHosts {
				for _, h := range hs {
					if h != "" {
						hosts[h] = true
					}
				}
			}
			if g := a.Info["gpu"]; g != "" {
				gpus[g] = true
			}
		}
	}
	if len(hosts) == 0 && len(gpus) == 0 {
		return
	}
	r.add("", "the raw outputs name hosts %s; GPUs %s", listOr(hosts), listOr(gpus))
}

// maxHardwareLines bounds the devices verify prints one a line; the
// rest are counted (hardware.json lists them all).
const maxHardwareLines = 64

// checkHardware re-derives the hardware list (layout.Hardware) from
// the raw outputs (runner.Hardware) and compares it with the folder's,
// device by device: a device the file lists that the outputs do not show,
// or shows otherwise, and one the outputs show that the file leaves out,
// are findings; the list is printed for the customer to match with what
// was received. A folder without the file is a note when its journal is
// of a gpuaccept that did not list hardware yet (no retries recorded,
// result.Run.Retries), a finding when it is of one that did.
func (r *Result) checkHardware(ctx context.Context, dir string, plugins runner.Plugins, run *result.Run) {
	have, ok, err := resultsdir.ReadHardware(dir)
	switch {
	case err != nil:
		r.add(Mismatch, "%v", err)
		return
	case !ok && run.Retries == nil:
		r.add(Note, "no hardware list (%s): made before gpuaccept listed hardware; the hosts and GPU models above are all the raw outputs are checked to name", layout.Hardware)
		return
	case !ok:
		r.add(Mismatch, "%s: missing, but the journal is of a gpuaccept that lists the hardware at sign-off: the GPUs and NICs the raw outputs show are no part of the sign-off", layout.Hardware)
	}
	if plugins == nil {
		return
	}
	want, problems := runner.Hardware(ctx, plugins, dir, run)
	for _, p := range problems {
		r.add(Rejudged, "hardware list: %s", p)
	}
	if !ok {
		return
	}
	key := func(d result.Device) string {
		data, _ := json.Marshal(d)
		return string(data)
	}
	shown := map[string]bool{}
	for _, d := range want {
		shown[key(d)] = true
	}
	listed := map[string]bool{}
	for _, d := range have {
		listed[key(d)] = true
		if !shown[key(d)] {
			r.add(Mismatch, "%s lists %s (seen by %s), which the raw outputs, parsed again, do not show so", layout.Hardware, d, strings.Join(d.Tests, ", "))
		}
	}
	for _, d := range want {
		if !listed[key(d)] {
			r.add(Mismatch, "the raw outputs show %s (seen by %s), which %s does not list so", d, strings.Join(d.Tests, ", "), layout.Hardware)
		}
	}
	if len(want) == 0 {
		r.add(Note, "%s: the raw outputs show no GPU UUID, serial, bus id or NIC GUID (no test whose plugin names hardware ran): nothing binds the evidence to the machines received", layout.Hardware)
		return
	}
	r.add("", "hardware the raw outputs show (%s, re-derived; match it with the machines received):", layout.Hardware)
	for i, d := range want {
		if i == maxHardwareLines {
			r.add("", "  ... and %d more (%s lists every one)", len(want)-i, layout.Hardware)
			break
		}
		r.add("", "  %s", d)
	}
}

// checkAttempts holds each retried test's attempts to what the journal
// recorded as they ended (journal attempt lines, result.Run.Ended) and to
// the retries the run allowed (result.Run.Retries): an attempt taken out
// of a test (its raw folder and its place in Attempts deleted, a WARN
// made a PASS) leaves its journal line and the last attempt's number
// behind. Runs made before attempts were recorded have neither.
func (r *Result) checkAttempts(run *result.Run) {
	ended := map[string][]result.Test{}
	for _, a := range run.Ended {
		ended[a.Name] = append(ended[a.Name], a)
	}
	for _, t := range run.Tests {
		kept := len(t.Attempts)
		if t.Attempt > 0 && t.Attempt != kept+1 {
			r.add(Mismatch, "%s: its last attempt is attempt %d, but the run keeps %s before it: an attempt was taken out (or made up)", t.Name, t.Attempt, result.Count(kept, "earlier attempt"))
		}
		for i, a := range t.Attempts {
			if a.Attempt > 0 && a.Attempt != i+1 {
				r.add(Mismatch, "%s: attempt %d of the run's list says it is attempt %d", t.Name, i+1, a.Attempt)
			}
		}
		if run.Retries != nil && kept > *run.Retries {
			r.add(Mismatch, "%s: %s, but the run allowed %s (--retries)", t.Name, result.Count(kept+1, "attempt"), result.Count(*run.Retries, "retry"))
		}
		j := ended[t.Name]
		if run.Retries == nil && len(j) == 0 {
			continue
		}
		if len(j) != kept {
			r.add(Mismatch, "%s: the journal recorded %s ending before its last (%s), the test keeps %d: an attempt's verdict was taken out or added", t.Name, result.Count(len(j), "attempt"), attemptsSaid(j), kept)
			continue
		}
		for i, a := range j {
			k := t.Attempts[i]
			if a.Status != k.Status || a.Message != k.Message || !slices.Equal(a.Raw, k.Raw) {
				r.add(Mismatch, "%s: attempt %d ended %s (%s) as the journal recorded it then, the test keeps %s (%s)", t.Name, i+1, a.Status, cut(a.Message, 120), k.Status, cut(k.Message, 120))
			}
		}
	}
	names := map[string]bool{}
	for _, t := range run.Tests {
		names[t.Name] = true
	}
	for _, n := range slices.Sorted(maps.Keys(ended)) {
		if j := ended[n]; !names[n] {
			r.add(Mismatch, "%s: the journal recorded %s of it ending (%s), but the run has no such test", n, result.Count(len(j), "attempt"), attemptsSaid(j))
		}
	}
}

// attemptsSaid lists attempts as "1 error, 2 fail".
func attemptsSaid(as []result.Test) string {
	var out []string
	for _, a := range as {
		out = append(out, fmt.Sprintf("%d %s", a.Attempt, a.Status))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func listOr(set map[string]bool) string {
	if len(set) == 0 {
		return "(none named)"
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}

// minRecording is the size below which a file of the shipped recordings
// is not looked for among raw outputs: an empty file or a one-line status
// may well be a real run's too.
const minRecording = 256

// checkRecordings finds the raw outputs of the folder (manifest m's
// files under raw/ and the localisations' raw/, by their SHA-256) that
// are byte for byte a file of recs, the recordings this gpuaccept ships:
// in a run that says it is a replay (the demo) or a check of files that
// is said, and the run is no sign-off of hardware (Replay); in any other
// run (one that names a launcher, so a cluster) it is a finding,
// for those outputs came from the machine the recording was made on, not
// from the cluster the run names.
func (r *Result) checkRecordings(recs iofs.FS, run *result.Run, m *manifest.Manifest) {
	if recs == nil {
		return
	}
	shipped := map[string]string{} // sha256 -> path in recs
	_ = iofs.WalkDir(recs, ".", func(p string, d iofs.DirEntry, err error) error {
		// outputs.json records how the steps ended (exit codes, file
		// names), the same in every run made alike: no output of the
		// machine.
		if err != nil || !d.Type().IsRegular() || path.Base(p) == layout.Outputs {
			return nil
		}
		data, err := iofs.ReadFile(recs, p)
		if err != nil || len(data) < minRecording {
			return nil
		}
		sum := sha256.Sum256(data)
		shipped[hex.EncodeToString(sum[:])] = p
		return nil
	})
	var found []string
	first := ""
	for _, f := range m.Files {
		if !strings.HasPrefix(f.Path, layout.Raw+"/") && !(strings.HasPrefix(f.Path, layout.Localise+"/") && strings.Contains(f.Path, "/"+layout.Raw+"/")) {
			continue
		}
		if p, ok := shipped[f.SHA256]; ok {
			if first == "" {
				first = f.Path + " is " + p
			}
			found = append(found, f.Path)
		}
	}
	if len(found) == 0 {
		return
	}
	if run.Launcher == result.ReplayLauncher || run.Launcher == CheckSuite {
		// A replay (the demo) or a check of the files says what it is,
		// and names no cluster: said, not a finding.
		r.Replay = true
		r.add(Note, "%s of the raw outputs are the recordings this gpuaccept ships (%s): the run is a %s of them (launcher %s), no sign-off of any cluster's hardware", result.Count(len(found), "file"), first, map[bool]string{true: "replay", false: "check"}[run.Launcher == result.ReplayLauncher], run.Launcher)
		return
	}
	r.add(Mismatch, "%s of the raw outputs are byte for byte the recordings this gpuaccept ships (%s): they were recorded on the project's own machine, not on the cluster this run (launcher %s) names", result.Count(len(found), "file"), first, run.Launcher)
}

// CheckSuite is the suite, and the launcher, of the run gpuaccept check
// writes (runner.CheckInto).
const CheckSuite = "check"

// checkParams holds test t's parameters to want, those its suite (what,
// in baseline s) gives. Parameters it does not give (--param), or one of
// its own left out, are the operator's to choose, and a customer must see
// them: the raw outputs are judged again with the suite's own, and a
// verdict or number that differs (a health check with xid_fatal=48
// passes a node with XID 79) is a finding, for the SKU rules do not give
// it; else a note (a folder of the binaries, bindir, judges the same).
// The suite test's site parameters (st, sku.SuiteTest.SiteParams: the
// NIC map) say what was measured on the site, not how it is judged: they
// are judged again as the run gave them, and a run that differs from the
// suite in them alone is a note naming each, no finding. st is nil for a
// test of no suite (check).
func (r *Result) checkParams(s *sku.SKU, t result.Test, want map[string]string, st *sku.SuiteTest, what string) {
	var over, gone, site []string
	own := maps.Clone(want)
	if own == nil {
		own = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(t.Params)) {
		if sv, ok := want[k]; ok && sv == t.Params[k] {
			continue
		}
		if st.IsSiteParam(k) {
			site = append(site, siteDiff(k, t.Params[k], want, what))
			own[k] = t.Params[k]
			continue
		}
		over = append(over, k+"="+t.Params[k])
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := t.Params[k]; ok {
			continue
		}
		if st.IsSiteParam(k) {
			site = append(site, fmt.Sprintf("%s unset, the plugin's default (%s gives %s=%s)", k, what, k, want[k]))
			delete(own, k)
			continue
		}
		gone = append(gone, k+"="+want[k])
	}
	if len(site) > 0 {
		r.add(Note, "%s ran with site parameters %s: what is measured on the site (site_params), set by --param or the site file; the raw outputs are judged as they ran", t.Name, strings.Join(site, "; "))
	}
	if len(over) == 0 && len(gone) == 0 {
		return
	}
	var parts []string
	if len(over) > 0 {
		parts = append(parts, "with parameters "+what+" does not give: "+strings.Join(over, " "))
	}
	if len(gone) > 0 {
		parts = append(parts, "without parameters "+what+" gives: "+strings.Join(gone, " "))
	}
	said := t.Name + " ran " + strings.Join(parts, ", and ")
	if r.judge == nil || len(t.Raw) == 0 {
		r.add(Mismatch, "%s: its verdict with the suite's parameters cannot be re-derived", said)
		return
	}
	suiteOwn := t
	suiteOwn.Params = own
	// Both judged now against s, so that only the parameters differ (the
	// site's own ones taken as the run gave them).
	had, err := r.judge(s, t)
	if err != nil {
		return // Rejudge named it
	}
	got, err := r.judge(s, suiteOwn)
	if err != nil {
		r.add(Mismatch, "%s: judged again with the suite's parameters: %v", said, err)
		return
	}
	diffs := runner.VerdictDiffs(t.Name, had, got)
	if len(diffs) == 0 {
		r.add(Note, "%s (--param): judged again with the suite's own, the raw outputs give the same verdict and numbers", said)
		return
	}
	r.add(Mismatch, "%s (--param or an edited journal): judged with the suite's own, the raw outputs give %s: the SKU rules do not give the verdict recorded", said, strings.Join(diffs, "; "))
}

// siteDiff says how the run's value v of site parameter k differs from
// the one want, of the suite what, gives.
func siteDiff(k, v string, want map[string]string, what string) string {
	if sv, ok := want[k]; ok {
		return fmt.Sprintf("%s=%s (%s gives %s=%s)", k, v, what, k, sv)
	}
	return fmt.Sprintf("%s=%s (%s leaves it to the plugin's default)", k, v, what)
}

// checkAttemptFolders holds the raw outputs of a test of a run and its
// earlier attempts to the folders the runner writes: the last attempt in
// raw/TEST, attempt N in raw/TEST.attempt-N, counted from 1 without a gap
// (an attempt dropped from the journal, its WARN made a PASS, leaves its
// number missing).
func (r *Result) checkAttemptFolders(t result.Test) {
	check := func(a result.Test, want string) {
		if len(a.Raw) == 0 {
			return
		}
		if got, err := resultsdir.RawFolder(a); err == nil && got != want {
			r.add(Mismatch, "%s: raw outputs in %s/%s, but the runner keeps them in %s/%s", a.Name, layout.Raw, got, layout.Raw, want)
		}
	}
	for i, a := range t.Attempts {
		check(a, filepath.Base(resultsdir.AttemptDir(t.Name, i+1)))
	}
	check(t, t.Name)
}

// checkCheck holds a folder of gpuaccept check to what check writes: one
// test of the SKU, run once per group of files given (TEST, or TEST[FILE]
// each in raw/TEST.N), with no parameter (check takes none), no attempt,
// no --test choice and raw outputs for every run.
func (r *Result) checkCheck(s *sku.SKU, run *result.Run) {
	if run.Suite != CheckSuite || run.Launcher != CheckSuite {
		r.add(Mismatch, "suite %s with launcher %s: only gpuaccept check writes suite %q, always with launcher %q; the run's tests cannot be held to a suite", strconv.QuoteToASCII(run.Suite), strconv.QuoteToASCII(run.Launcher), CheckSuite, CheckSuite)
		return
	}
	if len(run.Tests) == 0 {
		r.add(Mismatch, "suite check: the run has no test: a check judges at least one file")
		return
	}
	if len(run.Selected) > 0 {
		r.add(Mismatch, "suite check: the run records a --test choice (%s), which check does not make", strings.Join(run.Selected, ", "))
	}
	base, _, _ := strings.Cut(run.Tests[0].Name, "[")
	n := len(run.Tests)
	for i, t := range run.Tests {
		name, label, several := strings.Cut(t.Name, "[")
		switch {
		case name != base:
			r.add(Mismatch, "%s: a check judges one test, and this one is of %s too", t.Name, base)
		case several != (n > 1) || (several && (label == "]" || !strings.HasSuffix(label, "]"))):
			r.add(Mismatch, "%s: a check of %s names its test TEST[FILE] when it judges several runs, else TEST", t.Name, result.Count(n, "run"))
		}
		if len(t.Raw) == 0 {
			r.add(Mismatch, "%s: check keeps the files it judges, and the run has none for it", t.Name)
		} else if got, err := resultsdir.RawFolder(t); err == nil && got != filepath.Base(resultsdir.CheckDir(base, i+1, n)) {
			r.add(Mismatch, "%s: raw outputs in %s/%s, but check keeps run %d of %d in %s", t.Name, layout.Raw, got, i+1, n, resultsdir.CheckDir(base, i+1, n))
		}
		if len(t.Attempts) > 0 {
			r.add(Mismatch, "%s: recorded %s, but check retries nothing", t.Name, result.Count(len(t.Attempts), "earlier attempt"))
		}
		// check hands a plugin the metrics the SKU declares for the
		// test (workload.command's), and no other parameter.
		r.checkParams(s, t, runner.CheckParams(s, base), nil, "suite check")
		if !t.Scope.IsZero() && t.Scope != run.Scope {
			r.add(Mismatch, "%s: judged at scope %s, but the run's scope is %s", t.Name, t.Scope, run.Scope)
		}
	}
}

// checkRawFolders names every folder under rel/raw/ (rel "" for dir) that
// no test or attempt of run has its raw outputs in: outputs kept and no
// verdict from them (an attempt or a test dropped from the journal).
func (r *Result) checkRawFolders(dir, rel string, run *result.Run) {
	ents, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(rel), layout.Raw))
	if err != nil {
		return // none; the manifest names what is missing
	}
	claimed := map[string]bool{}
	unfinished := map[string]bool{}
	for _, t := range run.Tests {
		for _, a := range append(append([]result.Test(nil), t.Attempts...), t) {
			if f, err := resultsdir.RawFolder(a); err == nil {
				claimed[f] = true
			}
		}
		if t.Message == journal.Interrupted && len(t.Raw) == 0 {
			unfinished[t.Name] = true
		}
	}
	for _, e := range ents {
		if unfinished[e.Name()] {
			r.add(Mismatch, "%s: the raw outputs of a test that did not finish (%s): no verdict was made from them", path.Join(rel, layout.Raw, e.Name()), e.Name())
			continue
		}
		if !claimed[e.Name()] {
			r.add(Mismatch, "%s: no test or attempt of the journal has its raw outputs there: outputs kept with no verdict from them (a test or an attempt dropped)", path.Join(rel, layout.Raw, e.Name()))
		}
	}
}

// checkLayout names every file manifest m lists that the layout of a
// results folder does not define (resultsdir.Strays): a report's
// look-alike (Report.html, results.json with a zero-width space), a file
// beside the reports or a raw output no step wrote is no part of what
// verify re-derives, yet a reader of the folder takes it for one. run is
// the main run; the localisations' runs are read from their journals.
func (r *Result) checkLayout(dir string, run *result.Run, m *manifest.Manifest) {
	runs := map[string]*result.Run{"": run}
	for _, sd := range subRunDirs(run) {
		clean := path.Clean(filepath.ToSlash(sd.dir))
		if !filepath.IsLocal(sd.dir) || !strings.HasPrefix(clean, layout.Localise+"/") {
			continue // verifySubRuns names it
		}
		sub, err := journal.Read(filepath.Join(dir, filepath.FromSlash(clean)))
		if err != nil {
			sub = nil // verifySubRuns names it; its files are not judged
		}
		runs[clean] = sub
	}
	files := make([]string, len(m.Files))
	for i, f := range m.Files {
		files[i] = f.Path
	}
	for _, s := range resultsdir.Strays(dir, files, runs) {
		if s.Defined {
			r.add(Mismatch, "%s: looks like %s, another file of the folder (the same name once case, Unicode compatibility forms and invisible characters are folded): a reader takes one for the other", strconv.Quote(s.Path), strconv.Quote(s.LooksLike))
			continue
		}
		if s.LooksLike != "" {
			r.add(Mismatch, "%s: not a file of a results folder's layout, and it looks like %s (the same name once case, Unicode compatibility forms and invisible characters are folded): a reader takes it for what gpuaccept wrote", strconv.Quote(s.Path), strconv.Quote(s.LooksLike))
			continue
		}
		r.add(Mismatch, "%s: not a file of a results folder's layout (reports, journal, hardware.json, baseline/SKU.yaml, raw outputs the journal or outputs.json names, localise/ runs): nothing gpuaccept writes, and nothing verify re-derives", strconv.Quote(s.Path))
	}
}

// How a kept baseline copy compares with the built-in SKU file
// (Result.Baseline).
const (
	// BaselineBuiltin: byte for byte this gpuaccept's built-in file.
	BaselineBuiltin = "built-in"
	// BaselineSite: a SKU this gpuaccept has built in, with other bands.
	BaselineSite = "not the built-in"
	// BaselineOwn: a SKU this gpuaccept has none of.
	BaselineOwn = "a site's own SKU"
)

// maxBuiltinDiffs is how many verdicts that differ against the built-in
// baseline are listed.
const maxBuiltinDiffs = 10

// checkBuiltin compares the kept baseline copy s with the built-in SKU
// file of the same name and, when they differ, judges the raw outputs
// against the built-in one and says which verdicts and bands it changes:
// the customer sees whose bands signed the cluster off.
func (r *Result) checkBuiltin(ctx context.Context, dir string, o Options, s *sku.SKU, run *result.Run, recorded string) {
	name := s.Name
	kept, err := safefs.ReadFile(dir, layout.Baseline+"/"+name+".yaml", maxResults)
	if err != nil {
		return // KeptBaseline read it; the manifest check names a change
	}
	want, err := iofs.ReadFile(o.Builtin, name+".yaml")
	kind := Note
	if o.StrictBaseline {
		kind = Mismatch
	}
	// The reports say a site's file judged the run (results.json
	// sku_source): a kept copy that is not the built-in file cannot be
	// said to be it.
	builtinSaid := run.SKUSource == sku.BuiltIn
	if err != nil {
		r.Baseline = BaselineOwn
		r.add(kind, "%s/%s.yaml: this gpuaccept (%s) has no built-in SKU %s: the verdicts hold against a site's own SKU file only", layout.Baseline, name, o.Version, name)
		if builtinSaid {
			r.add(Mismatch, "results.json says SKU %s is built-in (sku_source), but this gpuaccept (%s) has no built-in SKU of that name", name, o.Version)
		}
		// A site's SKU under a name of its own judges the GPU a built-in
		// SKU knows: what that one would say is the customer's to see.
		if builtin := builtinOfGPU(o, run); builtin != nil {
			r.add(Note, "the raw outputs' GPU is built-in SKU %s's: the verdicts against it follow", builtin.Name)
			r.compareWithBuiltin(ctx, dir, o, s, builtin, run, recorded, false)
		}
		return
	}
	if string(kept) == string(want) {
		r.Baseline = BaselineBuiltin
		return
	}
	if builtinSaid {
		r.add(Mismatch, "results.json says SKU %s is the built-in file (sku_source), but %s/%s.yaml is not this gpuaccept's (%s) built-in one", name, layout.Baseline, name, o.Version)
	}
	r.Baseline = BaselineSite
	r.add(kind, "%s/%s.yaml is not this gpuaccept's (%s) built-in %s baseline (%s): the verdicts hold against the kept copy's bands", layout.Baseline, name, o.Version, name, strings.Replace(byteDiff(kept, want), "re-rendered", "built-in", 1))
	cat, err := sku.Load(o.Builtin, "built-in")
	if err != nil {
		r.add(Note, "built-in SKU files: %v", err)
		return
	}
	builtin, err := cat.Get(name)
	if err != nil {
		r.add(Note, "built-in SKU files: %v", err)
		return
	}
	r.checkCopiedReferences(s, builtin, run)
	r.compareWithBuiltin(ctx, dir, o, s, builtin, run, recorded, true)
}

// builtinOfGPU is the built-in SKU the GPU model the run's raw outputs
// name (its tests' info "gpu") picks (sku.Catalog.PickForGPU), nil when
// they name none, several, or one no built-in SKU lists.
func builtinOfGPU(o Options, run *result.Run) *sku.SKU {
	models := map[string]bool{}
	for _, t := range run.Tests {
		if g := t.Info["gpu"]; g != "" && len(t.Raw) > 0 {
			models[g] = true
		}
	}
	if len(models) != 1 {
		return nil
	}
	cat, err := sku.Load(o.Builtin, "built-in")
	if err != nil {
		return nil
	}
	for m := range models {
		if s, _, err := cat.PickForGPU(m); err == nil {
			return s
		}
	}
	return nil
}

// compareWithBuiltin judges the run's raw outputs against the built-in
// SKU builtin as well as against the kept copy s and notes every verdict
// that differs (the first maxBuiltinDiffs); withSuite also holds the run
// to builtin's suite of the same name (checkBuiltinSuite).
func (r *Result) compareWithBuiltin(ctx context.Context, dir string, o Options, s, builtin *sku.SKU, run *result.Run, recorded string, withSuite bool) {
	name := builtin.Name
	unjudged := false
	if withSuite {
		unjudged = r.checkBuiltinSuite(builtin, run)
	}
	judged := *run
	judged.Dir = recorded
	var diffs []string
	for _, t := range run.Tests {
		if len(t.Raw) == 0 {
			continue
		}
		// Both judged now, so that only the bands differ, not the
		// version that judged.
		had, err := runner.JudgeAgain(ctx, o.Plugins, s, dir, &judged, t)
		if err != nil {
			continue // Rejudge named it
		}
		got, err := runner.JudgeAgain(ctx, o.Plugins, builtin, dir, &judged, t)
		if err != nil {
			continue
		}
		diffs = append(diffs, runner.VerdictDiffs(t.Name, had, got)...)
	}
	for i, d := range diffs {
		if i == maxBuiltinDiffs {
			r.add(Note, "against the built-in %s baseline: and %d more differences", name, len(diffs)-i)
			break
		}
		r.add(Note, "against the built-in %s baseline: %s", name, d)
	}
	if len(diffs) == 0 && !unjudged {
		r.add(Note, "against the built-in %s baseline the raw outputs give the same verdicts and bands", name)
	}
}

// checkCopiedReferences finds entries of the kept copy s that are the
// built-in file's reference entries, nothing changed but their basis
// (record.CopiedReferences), saying they are golden, the site's own
// recording: public numbers a report would show as the site's (the
// basis lines of a copy deleted).
//
// A folder whose verdicts name no basis at all was made before gpuaccept
// kept one (its kept copy could not mark an entry reference): a note.
func (r *Result) checkCopiedReferences(s, builtin *sku.SKU, run *result.Run) {
	kind, why := Note, " (the folder was made before gpuaccept named a verdict's basis)"
	for _, t := range run.Tests {
		if len(t.Basis) > 0 {
			kind, why = Mismatch, ""
			break
		}
	}
	for _, e := range record.CopiedReferences(builtin, s) {
		r.add(kind, "%s/%s.yaml line %d: %s %s %s is the built-in file's reference entry (a cited measurement of other hardware), marked golden (the site's own recording): its verdicts would read as the site's%s", layout.Baseline, s.Name, e.Line, e.Test, e.Scope, e.Metric, why)
	}
}

// checkBuiltinSuite holds the run to the suite of the same name in the
// built-in SKU file builtin, where the kept copy's differs: a suite the
// built-in file has not, a test it runs that the run skipped by the kept
// copy's rules (min_gpus, skip) or left out, and parameters it does not
// give are findings, for the verdict the built-in baseline would give
// them cannot be re-derived (nothing ran, or ran otherwise). It says
// whether it found one.
func (r *Result) checkBuiltinSuite(builtin *sku.SKU, run *result.Run) bool {
	if run.Suite == CheckSuite {
		return false
	}
	before := r.Findings
	bsu, ok := builtin.Suites[run.Suite]
	if !ok {
		r.add(Mismatch, "suite %s is not a suite of this gpuaccept's built-in %s baseline: the kept copy's suite is a site's own, which the built-in SKU rules do not hold", strconv.QuoteToASCII(run.Suite), builtin.Name)
		return true
	}
	chosen := map[string]bool{}
	for _, n := range run.Selected {
		chosen[n] = true
	}
	have := map[string]result.Test{}
	for _, t := range run.Tests {
		have[t.Name] = t
	}
	for _, st := range bsu.Tests {
		if len(chosen) > 0 && !chosen[st.Test] {
			continue
		}
		t, ok := have[st.Test]
		reason := st.SkipReason(run.Scope)
		switch {
		case !ok && reason == "":
			r.add(Mismatch, "%s: the built-in %s suite %s runs it, but the run has no result for it (the kept copy's suite leaves it out)", st.Test, builtin.Name, run.Suite)
		case !ok:
		case len(t.Raw) == 0 && t.Status == result.Skip && reason == "" && !strings.Contains(t.Message, " failed health: "):
			r.add(Mismatch, "%s: skipped by the kept copy's suite %s (%s), but the built-in %s suite %s runs it at scope %s: nothing ran, so its verdict against the built-in baseline cannot be re-derived", st.Test, run.Suite, t.Message, builtin.Name, run.Suite, run.Scope)
		case len(t.Raw) > 0:
			r.checkParams(builtin, t, runner.Params(bsu.Params, st.Params), st, "the built-in "+builtin.Name+" suite "+run.Suite)
		}
	}
	return r.Findings > before
}

// unrendered says why a report that differs from its rendering by this
// gpuaccept (version), d, is a finding, and the remedy.
func unrendered(d string, m *manifest.Manifest, same bool, version string) string {
	switch {
	case same:
		return "differs from the one re-rendered from the journal and the baseline copy, " + d
	case m.Legacy():
		return fmt.Sprintf("not hashed by a format 1 manifest, and this gpuaccept (%s) renders it otherwise (%s): what it says cannot be re-derived; run gpuaccept report DIR with this version to render the reports again from the journal, or verify with the version that made them", quoteVersion(version), d)
	}
	return fmt.Sprintf("differs from the one this gpuaccept (%s) renders from the journal and the baseline copy, %s; the manifest says gpuaccept %s made it, but a report this version cannot render byte for byte is not re-derived, whatever version made it: run gpuaccept report DIR with this version to render the reports again from the journal, or verify with the version that made them", quoteVersion(version), d, quoteVersion(m.Version))
}

// quoteVersion shows a gpuaccept version as a folder states it, quoted
// with every byte that does not show itself escaped: "dev " and
// "dev\u200b" are not "dev".
func quoteVersion(v string) string {
	return strconv.QuoteToGraphic(v)
}

// checkReports re-derives the reports of the results folder at rel (""
// for dir itself) from its run and baseline s: results.json value by
// value, the others byte for byte. A report that renders differently is
// a finding whatever version the manifest claims made it (same: this
// one): a version is a string the folder states, which a forger chooses
// ("dev " for "dev"), and a report another layout is allowed would be
// re-derived only in part (a verdict line hidden, another shown).
// Absent reports are the manifest's to name. It returns what matched.
func (r *Result) checkReports(dir, rel string, run *result.Run, s *sku.SKU, recorded string, m *manifest.Manifest, same bool, version string) (rederived, rerendered []string) {
	folder := filepath.Join(dir, filepath.FromSlash(rel))
	shown := *run
	shown.Dir = folder
	reports, err := Render(&shown, s, recorded)
	if err != nil {
		r.add(Mismatch, "%s: %v", path.Join(rel, layout.Results), err)
		return nil, nil
	}
	for _, rep := range reports {
		name := path.Join(rel, rep.Name)
		have, err := safefs.ReadFile(folder, rep.Name, maxResults)
		if errors.Is(err, iofs.ErrNotExist) {
			continue
		}
		if err != nil {
			r.add(Mismatch, "%s: %v", name, err)
			continue
		}
		if rep.Name == layout.Results {
			diffs, err := valueDiffs(have, rep.Data)
			if err != nil {
				diffs = []string{err.Error()}
			}
			for _, d := range diffs {
				r.add(Mismatch, "%s: %s", name, d)
			}
			if len(diffs) == 0 {
				rederived = append(rederived, rep.Name)
			}
			continue
		}
		if d := byteDiff(have, rep.Data); d != "" {
			r.add(Mismatch, "%s: %s", name, unrendered(d, m, same, version))
			continue
		}
		rerendered = append(rerendered, rep.Name)
	}
	sort.Strings(rerendered)
	return rederived, rerendered
}

// subRunDirs are the results folders of the localisations' runs, each
// once (a per-node run's tests are several SubRuns of one folder), with
// the SubRuns recorded from each.
func subRunDirs(run *result.Run) []subRunDir {
	var out []subRunDir
	at := map[string]int{}
	for _, l := range run.Localisations {
		for _, st := range l.Stages {
			for _, sr := range st.Runs {
				if sr.Dir == "" {
					continue
				}
				i, ok := at[sr.Dir]
				if !ok {
					i = len(out)
					at[sr.Dir] = i
					out = append(out, subRunDir{dir: sr.Dir, test: l.Test})
				}
				out[i].runs = append(out[i].runs, subRunOf{stage: st.Name, run: sr})
			}
		}
	}
	return out
}

type subRunOf struct {
	stage string
	run   result.SubRun
}

type subRunDir struct {
	dir, test string
	runs      []subRunOf
}

// verifySubRuns checks the localisations' runs the way Verify checks the
// main one (their files are in the main manifest): each run's folder is
// read back from its journal, its raw outputs re-judged against its own
// baseline copy (or the main one), its reports re-derived, and each
// verdict the localisation recorded from it compared with its journal's.
// A run that could not start (error) may have no folder.
func (r *Result) verifySubRuns(ctx context.Context, o Options, s *sku.SKU, dir string, run *result.Run, m *manifest.Manifest, same bool) {
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f.Path] = true
	}
	// The runs' tests as their raw outputs give them, by folder and name.
	rejudged := map[string]map[string]result.Test{}
	for _, sd := range subRunDirs(run) {
		clean := path.Clean(filepath.ToSlash(sd.dir))
		if !filepath.IsLocal(sd.dir) || !strings.HasPrefix(clean, layout.Localise+"/") {
			r.add(Mismatch, "localisation of %s: run %s: not a folder under %s/ of the results folder: what lies there is no part of this sign-off", sd.test, strconv.QuoteToASCII(sd.dir), layout.Localise)
			continue
		}
		if !listed[path.Join(clean, layout.Journal)] {
			if sd.runs[0].run.Status == result.Error {
				if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(clean))); errors.Is(err, iofs.ErrNotExist) {
					continue // a run that could not start may have no folder
				}
			}
			r.add(Mismatch, "localisation of %s: run %s: %s lists no %s for it: its verdicts are no part of this sign-off", sd.test, sd.dir, layout.Manifest, path.Join(clean, layout.Journal))
			continue
		}
		folder := filepath.Join(dir, filepath.FromSlash(sd.dir))
		sub, err := journal.Read(folder)
		if err != nil {
			if errors.Is(err, iofs.ErrNotExist) && sd.runs[0].run.Status == result.Error {
				continue
			}
			r.add(Mismatch, "localisation of %s: run %s: %v", sd.test, sd.dir, err)
			continue
		}
		r.SubRuns++
		for _, sr := range sd.runs {
			got := result.Status("")
			for _, t := range sub.Tests {
				if t.Name == sr.run.Test {
					got = t.Status
				}
			}
			if got != sr.run.Status {
				if got == "" {
					got = "no such test"
				}
				r.add(Mismatch, "localisation of %s: %s round %d on %s: recorded %s %s, its journal (%s) says %s",
					sd.test, sr.stage, sr.run.Round, strings.Join(sr.run.Hosts, ","), sr.run.Test, sr.run.Status, sd.dir, got)
			}
		}
		ss := s
		if kept, err := resultsdir.KeptBaseline(folder, sub.SKU); err == nil {
			ss = kept
		}
		for _, d := range runner.Rejudge(ctx, o.Plugins, ss, folder, sub) {
			r.add(Rejudged, "%s: %s", sd.dir, d)
		}
		r.checkRawFolders(dir, sd.dir, sub)
		// A localisation's run is held to its suite as the main run is.
		saved := r.judge
		r.judge = func(s *sku.SKU, t result.Test) (result.Test, error) {
			return runner.JudgeAgain(ctx, o.Plugins, s, folder, sub, t)
		}
		r.prefix = sd.dir + ": "
		preflight, diffs := runner.PreflightCheck(ctx, o.Plugins, ss, folder, sub)
		for _, d := range diffs {
			r.add(Rejudged, "%s", d)
		}
		r.checkSuite(ss, sub, preflight)
		r.prefix, r.judge = "", saved
		tests := map[string]result.Test{}
		for _, t := range sub.Tests {
			got := t
			if len(t.Raw) > 0 {
				if got, err = runner.JudgeAgain(ctx, o.Plugins, ss, folder, sub, t); err != nil {
					got = t // Rejudge named it
				}
			}
			tests[t.Name] = got
		}
		rejudged[sd.dir] = tests
		recorded := sub.Dir
		if recorded == "" {
			recorded = folder
		}
		r.checkReports(dir, sd.dir, sub, ss, recorded, m, same, o.Version)
	}
	for _, l := range run.Localisations {
		r.checkLocalisation(s, l, rejudged)
	}
}

// checkLocalisation re-derives what localisation l recorded of its runs
// from their tests as their raw outputs give them (rejudged, by folder
// and test; a folder not there was named already): each run's status,
// figure and whether it is slow (localise.Rederive), the references of
// the stages that compute theirs, the node suspects of the per-node
// stage and of the pairs stage (strategy pairs), and, for every suspect
// named, a slow run of its host as evidence.
func (r *Result) checkLocalisation(s *sku.SKU, l result.Localisation, rejudged map[string]map[string]result.Test) {
	at := func(st result.Stage, sr result.SubRun) string {
		return fmt.Sprintf("localisation of %s: %s round %d on %s", l.Test, st.Name, sr.Round, strings.Join(sr.Hosts, ","))
	}
	for _, st := range l.Stages {
		groups := map[string][]result.SubRun{}
		for _, sr := range st.Runs {
			key := ""
			if st.Name == "per-node" {
				key = sr.Test
			}
			groups[key] = append(groups[key], sr)
			tests, ok := rejudged[sr.Dir]
			if !ok || sr.NICs != "" {
				// No folder (a run that could not start), or an HCA-pair
				// run whose figure is split by pair: its status is held
				// to its journal above.
				continue
			}
			t, ok := tests[sr.Test]
			if !ok {
				continue // named above: its journal has no such test
			}
			want := localise.Rederive(s, t, sr, l.Tolerance)
			var diffs []string
			if sr.Status != want.Status {
				diffs = append(diffs, fmt.Sprintf("status %s, re-derived %s", sr.Status, want.Status))
			}
			if sr.Figure != want.Figure || sr.FigureName != want.FigureName || sr.Unit != want.Unit {
				diffs = append(diffs, fmt.Sprintf("figure %q %g %s, re-derived %q %g %s", sr.FigureName, sr.Figure, sr.Unit, want.FigureName, want.Figure, want.Unit))
			}
			if sr.Slow != want.Slow || sr.Why != want.Why {
				diffs = append(diffs, fmt.Sprintf("slow %t (%s), re-derived %t (%s)", sr.Slow, sr.Why, want.Slow, want.Why))
			}
			for _, d := range diffs {
				r.add(Rejudged, "%s: %s recorded %s from its raw outputs (%s)", at(st, sr), sr.Test, d, sr.Dir)
			}
		}
		// Per-node and pairs runs are compared with the upper quartile
		// of their group; the other stages are given their reference.
		if st.Name == "per-node" || (st.Name == "pairs" && (l.Strategy == localise.Pairs || l.Strategy == localise.Matching)) {
			for _, g := range groups {
				ref := localise.Reference(g)
				for _, sr := range g {
					if sr.Reference != ref {
						r.add(Rejudged, "%s: reference %g recorded, the upper quartile of the stage's figures is %g", at(st, sr), sr.Reference, ref)
					}
				}
			}
		}
		names, known := localise.NodeSuspects(st, l.Strategy, l.Hosts)
		if !known {
			continue
		}
		named := map[string]bool{}
		for _, sp := range l.Suspects {
			if sp.Kind == "node" {
				named[sp.Host] = true
			}
		}
		for _, h := range names {
			if !named[h] {
				r.add(Rejudged, "localisation of %s: the runs of its %s stage name node %s a suspect, and the localisation names no such suspect", l.Test, st.Name, h)
			}
		}
	}
	for _, sp := range l.Suspects {
		if !slowRunOf(l, sp.Host) {
			r.add(Rejudged, "localisation of %s: suspect %s (%s stage) has no slow run of its host among the localisation's runs to back it", l.Test, sp.Name(), sp.Stage)
		}
	}
}

// slowRunOf says whether a run of l on host is slow, or one of its HCA
// pairs.
func slowRunOf(l result.Localisation, host string) bool {
	for _, st := range l.Stages {
		for _, sr := range st.Runs {
			if !slices.Contains(sr.Hosts, host) {
				continue
			}
			if sr.Slow {
				return true
			}
			for _, f := range sr.NICFigures {
				if f.Slow {
					return true
				}
			}
		}
	}
	return false
}
