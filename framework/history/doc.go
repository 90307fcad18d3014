// Package history is gpuaccept's results store: every results folder a
// run, check, health or localise leaves, its judged points keyed by the
// hardware its raw outputs show (GPU serial and UUID, NIC GUID, host), so
// that a part's figures follow it across runs and hosts, and each part's
// latest value is compared with its own acceptance value (Drift).
//
// The store is SQLite (the default: one file, $XDG_STATE_HOME/gpuaccept/
// history.db, safe for several processes of one host) or PostgreSQL (a
// postgres:// URL, for a fleet), behind one interface (Store) and one
// schema, made by the numbered SQL files of migrations/ (applied in order
// from an empty store, each recorded in schema_migrations; a file
// NNNN_NAME.sqlite.sql or NNNN_NAME.postgres.sql replaces the shared
// NNNN_NAME.sql for one database).
//
// The schema (migrations/0001_init.sql):
//   - runs: one row per results folder, keyed by its sign-off digest
//     (manifest.Digest); its folder, SKU, suite, scope, launcher,
//     verdict, start, gpuaccept version and command (CommandOf).
//   - points: one row per judged metric point (result.Judged), keyed by
//     its run's digest and its number in the run: test, metric, labels
//     (canonical JSON), size in bytes, value, unit, band, expected,
//     verdict, basis, time, and the host, GPU UUID and serial, NIC name
//     and GUID PointsOf finds for it (empty where the outputs do not say).
//     Indexes serve trends per GPU serial, GPU UUID, host, NIC GUID and
//     test.
//   - points.gpu_model (migrations/0002_gpu_model.sql): the GPU model
//     hardware.json names for the point, empty where unknown. A series
//     (Drift, Latest, Compare, the plots) is one part of one SKU and one
//     GPU model: never compared across them.
//
// A folder is imported only when sealed (its files match its
// manifest.json), once: a second import of the same digest adds nothing.
// gpuaccept history import also verifies it first as gpuaccept verify
// does (ImportVerified, with the command's Verifier) and refuses one with
// findings; a burn-in folder imports as its cycles.
// The store points at the folder and never changes it; gpuaccept verify
// still works on it. A store that cannot be reached or written returns an
// error that the commands print as a warning (Append): the folder can be
// imported later.
package history
