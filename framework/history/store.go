package history

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go

	"github.com/gpuaccept/gpuaccept/framework/safefs"
)

// Off is the --history value that turns the store off.
const Off = "off"

// ErrOff is returned by Open for the location Off: the caller records
// nothing and says nothing.
var ErrOff = errors.New("history is off (--history off)")

// Store is a results store: the runs imported and their judged points.
// SQLite (one file, several processes of one host) and PostgreSQL (a
// fleet) implement it with one schema (migrations/).
type Store interface {
	// Insert adds run and its points in one transaction. added is false,
	// and nothing is written, when a run of the same digest is already
	// in the store (an import is idempotent). Points' Digest and Seq are
	// set from run and their order.
	Insert(ctx context.Context, run Run, points []Point) (added bool, err error)
	// Points lists the points f selects, with their run's SKU, folder
	// and command, oldest first (then by run digest and number).
	Points(ctx context.Context, f Filter) ([]Point, error)
	// Runs lists the runs in the store, oldest first.
	Runs(ctx context.Context) ([]Run, error)
	// SchemaVersion is the number of the last migration applied.
	SchemaVersion(ctx context.Context) (int, error)
	// Where names the store for messages: the SQLite file, or the
	// PostgreSQL URL without its password.
	Where() string
	Close() error
}

// SQLite is the embedded store: one file, opened in WAL mode with a busy
// timeout so that several gpuaccept processes of one host write to it
// at once, each import one IMMEDIATE transaction.
type SQLite struct{ sqlStore }

// Postgres is the fleet store: a PostgreSQL database reached through pgx.
type Postgres struct{ sqlStore }

// DefaultPath is the SQLite store used when --history is not given:
// $XDG_STATE_HOME/gpuaccept/history.db, else
// ~/.local/state/gpuaccept/history.db. The error says neither is known.
func DefaultPath() (string, error) {
	if s := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(s) {
		return filepath.Join(s, "gpuaccept", "history.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the history store: no $XDG_STATE_HOME and %w", err)
	}
	return filepath.Join(home, ".local", "state", "gpuaccept", "history.db"), nil
}

// IsPostgres says loc (a --history value) names a PostgreSQL database.
func IsPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// Open opens the store loc names and migrates it up to this gpuaccept's
// schema: "" the default SQLite file (DefaultPath), a postgres:// or
// postgresql:// URL, else the path of a SQLite file, made (mode 0600, its
// folder 0700) when missing. loc Off returns ErrOff. Errors say what was
// being opened; a link or special file at the SQLite path, or at its
// -wal, -shm or -journal file, is refused (safefs.ErrRefused).
func Open(ctx context.Context, loc string) (Store, error) {
	switch {
	case loc == Off:
		return nil, ErrOff
	case IsPostgres(loc):
		db, err := sql.Open("pgx", loc)
		if err != nil {
			return nil, fmt.Errorf("open history store %s: %w", redactURL(loc), err)
		}
		s := &Postgres{sqlStore{db: db, pg: true, where: redactURL(loc), loc: loc}}
		if err := s.migrate(ctx); err != nil {
			db.Close()
			return nil, err
		}
		return s, nil
	}
	own := loc == ""
	if own {
		p, err := DefaultPath()
		if err != nil {
			return nil, err
		}
		loc = p
	}
	p, err := prepareFile(loc, own)
	if err != nil {
		return nil, err
	}
	// busy_timeout: a writer waits for another's transaction instead of
	// failing with SQLITE_BUSY; _txlock=immediate takes the write lock at
	// BEGIN, so two writers never deadlock upgrading a read lock.
	dsn := p + "?_pragma=busy_timeout(60000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open history store %s: %w", p, err)
	}
	s := &SQLite{sqlStore{db: db, where: p, loc: p}}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// prepareFile makes the SQLite file at loc safe to open: its folder made
// 0700 when missing, the file made 0600 (O_EXCL, which follows no link)
// when missing, and refused when it or a file SQLite keeps beside it is
// a link or special file. own says the folder is gpuaccept's own (the
// default location), which must not be a link either; a folder the user
// named is theirs to have linked. It returns the absolute path.
func prepareFile(loc string, own bool) (string, error) {
	p, err := filepath.Abs(loc)
	if err != nil {
		return "", fmt.Errorf("history store %s: %w", loc, err)
	}
	if strings.ContainsAny(p, "?#") {
		return "", fmt.Errorf("history store %s: a SQLite path may not hold ? or #", p)
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make the folder of history store %s: %w", p, err)
	}
	if fi, err := os.Lstat(dir); own && err == nil && !fi.IsDir() {
		return "", fmt.Errorf("history store %s: its folder %s is %s: %w", p, dir, safefs.Kind(fi.Mode()), safefs.ErrRefused)
	}
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f, err := safefs.CreateNew(dir, filepath.Base(p), 0o600)
		if err != nil {
			return "", fmt.Errorf("make history store %s: %w", p, err)
		}
		if err := f.Close(); err != nil {
			return "", fmt.Errorf("make history store %s: %w", p, err)
		}
	case err != nil:
		return "", fmt.Errorf("history store %s: %w", p, err)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("history store %s is %s: %w", p, safefs.Kind(fi.Mode()), safefs.ErrRefused)
	}
	for _, sfx := range []string{"-wal", "-shm", "-journal"} {
		if fi, err := os.Lstat(p + sfx); err == nil && !fi.Mode().IsRegular() {
			return "", fmt.Errorf("history store file %s is %s: %w", p+sfx, safefs.Kind(fi.Mode()), safefs.ErrRefused)
		}
	}
	return p, nil
}

// redactURL is a PostgreSQL URL without its password, for messages.
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	at := strings.LastIndexByte(strings.SplitN(rest, "/", 2)[0], '@')
	if at < 0 {
		return u
	}
	if user, _, found := strings.Cut(rest[:at], ":"); found {
		return scheme + "://" + user + ":xxxxx" + rest[at:]
	}
	return u
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered SQL file of migrations/: NNNN_NAME.sql, shared
// by both databases, or NNNN_NAME.sqlite.sql / NNNN_NAME.postgres.sql
// where one needs its own SQL.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the migrations for one database (pg: PostgreSQL),
// oldest first. A file whose name breaks the pattern, or two files of one
// number for the same database, is a programming error, caught by the
// tests.
func migrations(pg bool) ([]migration, error) {
	ents, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	mine, other := ".sqlite", ".postgres"
	if pg {
		mine, other = other, mine
	}
	byVersion := map[int]migration{}
	own := map[int]bool{}
	for _, e := range ents {
		base := strings.TrimSuffix(e.Name(), ".sql")
		if strings.HasSuffix(base, other) {
			continue
		}
		specific := strings.HasSuffix(base, mine)
		base = strings.TrimSuffix(base, mine)
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %s: want NNNN_NAME.sql", e.Name())
		}
		if _, dup := byVersion[v]; dup && own[v] == specific {
			return nil, fmt.Errorf("migration %d given twice", v)
		}
		if _, dup := byVersion[v]; dup && own[v] {
			continue // the database's own file wins over the shared one
		}
		data, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		byVersion[v] = migration{version: v, name: name, sql: string(data)}
		own[v] = specific
	}
	var out []migration
	for _, m := range byVersion {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %d is missing (found %d next)", i+1, m.version)
		}
	}
	return out, nil
}

// sqlStore is the store over database/sql that both databases share; pg
// switches the few places their SQL differs (placeholders, the migration
// lock).
type sqlStore struct {
	db    *sql.DB
	pg    bool
	where string
	// loc is what Open was given (a URL with its password).
	loc string
}

// Where implements Store.
func (s *sqlStore) Where() string { return s.where }

// Close implements Store.
func (s *sqlStore) Close() error { return s.db.Close() }

// q turns the ? placeholders of query into PostgreSQL's $1, $2, ... (no
// query of this package holds a ? in a literal).
func (s *sqlStore) q(query string) string {
	if !s.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// migrationLock is a number of PostgreSQL's advisory locks, held by the
// transaction that migrates so that two processes opening an empty store
// at once apply each migration once ("gpua" in ASCII).
const migrationLock = 0x67707561

// migrate applies the migrations the store lacks, each in its own
// transaction with its row in schema_migrations. Errors name the
// migration and the store.
func (s *sqlStore) migrate(ctx context.Context) error {
	ms, err := migrations(s.pg)
	if err != nil {
		return fmt.Errorf("history store %s: %w", s.where, err)
	}
	for _, m := range ms {
		if err := s.apply(ctx, m); err != nil {
			return fmt.Errorf("history store %s: migration %d (%s): %w", s.where, m.version, m.name, err)
		}
	}
	return nil
}

func (s *sqlStore) apply(ctx context.Context, m migration) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.pg {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied TEXT NOT NULL)"); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, s.q("SELECT COUNT(*) FROM schema_migrations WHERE version = ?"), m.version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	for _, stmt := range statements(m.sql) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", firstLine(stmt), err)
		}
	}
	if _, err := tx.ExecContext(ctx, s.q("INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)"), m.version, m.name, stamp(time.Now())); err != nil {
		return err
	}
	return tx.Commit()
}

// statements splits a migration file into its statements: comments
// (-- to the end of the line) dropped, split at each ;.
func statements(text string) []string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line + "\n")
	}
	var out []string
	for _, st := range strings.Split(b.String(), ";") {
		if st = strings.TrimSpace(st); st != "" {
			out = append(out, st)
		}
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// SchemaVersion implements Store.
func (s *sqlStore) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	if err := s.db.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("read the schema version of history store %s: %w", s.where, err)
	}
	return int(v.Int64), nil
}

// timeLayout is how times are stored: UTC, fixed width, so that text
// order is time order in both databases.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func stamp(t time.Time) string { return t.UTC().Format(timeLayout) }

func unstamp(s string) time.Time {
	t, _ := time.Parse(timeLayout, s)
	return t
}
