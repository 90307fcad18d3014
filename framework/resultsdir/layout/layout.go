// Package layout holds the names of a results folder, every one of them:
// the files and folders gpuaccept writes there and reads back. It is the
// leaf of framework/resultsdir, which reads and checks a folder by these
// names: it imports nothing, so that the packages resultsdir itself
// imports (journal writes journal.jsonl and baseline/) take the names from
// here too. No other package spells one of these names.
//
//	manifest.json[.sig]      what every file hashes to (Manifest, SigFile)
//	journal.jsonl            the run, one finished test per line (Journal)
//	baseline/SKU.yaml        the SKU file the run was judged against (Baseline)
//	raw/TEST/                one test's raw outputs (Raw): STEP.log (StepLog),
//	                         STEP.files/ (StepFiles), outputs.json (Outputs)
//	raw/TEST.attempt-N/      an earlier attempt of a retried test (AttemptSep)
//	raw/TEST.N/              the Nth of several runs given to check
//	localise/...             the results folders of a localisation's runs (Localise)
//	hardware.json            the GPUs and NICs the raw outputs show (Hardware)
//	results.json, junit.xml, report.html, summary.md, table.txt
//	                         the reports (Reports)
package layout

// Names in a results folder.
const (
	// Raw is the folder of the raw outputs, one folder per test.
	Raw = "raw"
	// Results is the run as JSON (result.Run), the report machines read.
	Results = "results.json"
	// Journal is the run, one finished test per line (framework/journal).
	Journal = "journal.jsonl"
	// Baseline is the folder that holds a copy of the SKU file the run was
	// judged against, named SKU.yaml, so the run can be verified against
	// exactly that baseline later.
	Baseline = "baseline"
	// Outputs, in each test's raw folder, records how each step ended: a
	// JSON list of plan.Output with paths relative to that folder. The
	// runner writes it; the replay launcher and verify read it, so a
	// results folder replays and re-judges as it ran.
	Outputs = "outputs.json"
	// Localise is the folder of a localisation's runs.
	Localise = "localise"
	// Hardware lists the GPUs and NICs the run's raw outputs show (GPU
	// UUIDs and serials, models, PCI bus ids, HCA names and GUIDs, by
	// host), as the plugins read them (result.HardwareInfo): written at
	// sign-off, covered by the manifest, re-derived by verify, so that a
	// customer can match the evidence to the hardware received. Folders
	// made before gpuaccept listed hardware have none.
	Hardware = "hardware.json"
	// Manifest is the manifest (framework/manifest reads and writes it),
	// SigFile its signature (the file ssh-keygen -Y sign writes).
	Manifest = "manifest.json"
	SigFile  = Manifest + ".sig"
	// AttemptSep joins a test's name and an attempt's number (1-based) in
	// the raw folder of an earlier attempt of a retried test:
	// raw/TEST.attempt-N.
	AttemptSep = ".attempt-"
)

// The reports framework/report writes in a results folder beside Results.
const (
	JUnit    = "junit.xml"
	HTML     = "report.html"
	Markdown = "summary.md"
	Table    = "table.txt"
)

// Reports are the reports framework/report writes in a results folder.
var Reports = []string{Results, JUnit, HTML, Markdown, Table}

// What a launcher writes in a test's raw folder: per step its combined
// stdout and stderr (StepLog) and the folder of the files it collected
// (StepFiles).
const (
	LogExt   = ".log"
	FilesExt = ".files"
)

// StepLog is the file name of a step's combined stdout and stderr in its
// test's raw folder: STEP.log.
func StepLog(step string) string { return step + LogExt }

// StepFiles is the folder of a step's collected files in its test's raw
// folder: STEP.files.
func StepFiles(step string) string { return step + FilesExt }

// What the slurm launcher keeps in a test's raw folder beside the steps'
// logs: the batch script that ran, the job's own output, and per step the
// host of each rank (STEP.ranks).
const (
	SlurmJobScript = "slurm-job.sh"
	SlurmJobOutput = "slurm-job.out"
	SlurmRanksExt  = ".ranks"
)
