package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Run is one results folder in the store.
type Run struct {
	// Digest is the folder's sign-off digest ("sha256:" and the hex
	// SHA-256 of its manifest.json, manifest.Digest): the run's key.
	Digest string `json:"digest"`
	// Folder is the results folder's absolute path when it was imported:
	// the store points at it and never replaces it.
	Folder   string    `json:"folder"`
	SKU      string    `json:"sku"`
	Suite    string    `json:"suite"`
	Scope    string    `json:"scope"`
	Launcher string    `json:"launcher"`
	Status   string    `json:"status"`
	Started  time.Time `json:"started"`
	Version  string    `json:"gpuaccept_version"`
	// Command is what made the folder: run, check, health or localise
	// (CommandOf).
	Command  string    `json:"command"`
	Imported time.Time `json:"imported"`
}

// Point is one judged metric point of a run, with the hardware it was
// measured on where the run's outputs name it (Import says how each key
// is found; a key is empty rather than guessed).
type Point struct {
	Digest string `json:"digest"`
	// Seq is the point's number in its run, from 0.
	Seq    int               `json:"seq"`
	Test   string            `json:"test"`
	Metric string            `json:"metric"`
	Labels map[string]string `json:"labels,omitempty"`
	// Size is the message size in bytes; 0 when not per size.
	Size int64 `json:"size,omitempty"`
	// Value is in Unit; NaN for a value that was no finite number
	// (stored as NULL; JSON null).
	Value float64 `json:"-"`
	Unit  string  `json:"unit"`
	Band  string  `json:"band,omitempty"`
	// Expected is the baseline reference, nil when none.
	Expected *float64 `json:"expected,omitempty"`
	Status   string   `json:"status"`
	Basis    string   `json:"basis,omitempty"`
	// At is when the point's test started (the run's start when the test
	// has none).
	At        time.Time `json:"at"`
	Host      string    `json:"host,omitempty"`
	GPUUUID   string    `json:"gpu_uuid,omitempty"`
	GPUSerial string    `json:"gpu_serial,omitempty"`
	// NIC is the adapter's name (mlx5_3), NICGUID its node GUID.
	NIC     string `json:"nic,omitempty"`
	NICGUID string `json:"nic_guid,omitempty"`
	// GPUModel is the model of the point's GPU as hardware.json names it
	// ("NVIDIA H100 80GB HBM3"), else of every GPU of its host when they
	// are one model; empty when the folder does not say.
	GPUModel string `json:"gpu_model,omitempty"`
	// SKU, Folder and Command are the run's, filled by Points.
	SKU     string `json:"sku,omitempty"`
	Folder  string `json:"folder,omitempty"`
	Command string `json:"command,omitempty"`
}

// MarshalJSON writes Value as a number, or null where it is NaN (JSON
// has no NaN).
func (p Point) MarshalJSON() ([]byte, error) {
	type plain Point
	var v *float64
	if !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0) {
		v = &p.Value
	}
	return json.Marshal(struct {
		plain
		Value *float64 `json:"value"`
	}{plain(p), v})
}

// Filter selects points: every field given must match; the zero Filter
// selects all.
type Filter struct {
	Host string
	// GPU matches a GPU's UUID when it holds a dash (NVIDIA's
	// "GPU-...", AMD's), else its serial.
	GPU string
	// NIC matches a NIC's GUID when it is one (hex digits, with 0x or
	// colons: "0xa088c20300a1b2c3", "7cfe:9003:00a5:95c0"), else its
	// adapter name ("mlx5_3").
	NIC    string
	Test   string
	Metric string
	// Digest is one run's.
	Digest string
}

// labelsText is labels as canonical JSON: keys sorted (encoding/json
// sorts map keys), "{}" for none.
func labelsText(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	data, _ := json.Marshal(l) // a map of strings always marshals
	return string(data)
}

const pointColumns = "digest, seq, test, metric, labels, size, value, unit, band, expected, status, basis, at, host, gpu_uuid, gpu_serial, nic, nic_guid, gpu_model"

// nPointColumns is how many columns pointColumns names.
const nPointColumns = 19

// pointBatch is how many points one INSERT carries into SQLite: 19
// columns x 500 is 9,500 parameters, under its limit of 32,766.
const pointBatch = 500

// Insert implements Store.
func (s *sqlStore) Insert(ctx context.Context, r Run, points []Point) (added bool, err error) {
	if s.pg {
		return s.insertCopy(ctx, r, points)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("history store %s: %w", s.where, err)
	}
	defer tx.Rollback()
	if added, err = s.insertRun(ctx, tx, r); err != nil || !added {
		return false, err
	}
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", nPointColumns), ", ") + ")"
	for start := 0; start < len(points); start += pointBatch {
		batch := points[start:min(start+pointBatch, len(points))]
		var b strings.Builder
		b.WriteString("INSERT INTO points (" + pointColumns + ") VALUES ")
		args := make([]any, 0, nPointColumns*len(batch))
		for i, p := range batch {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(one)
			args = append(args, pointRow(r.Digest, start+i, p)...)
		}
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return false, fmt.Errorf("history store %s: add the points of run %s: %w", s.where, r.Digest, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("history store %s: add run %s: %w", s.where, r.Digest, err)
	}
	return true, nil
}

// execer is a transaction or a connection.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertRun adds r's row, or nothing when its digest is in already
// (added false).
func (s *sqlStore) insertRun(ctx context.Context, tx execer, r Run) (added bool, err error) {
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO runs (digest, folder, sku, suite, scope, launcher, status, started, version, command, imported)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (digest) DO NOTHING`),
		r.Digest, r.Folder, r.SKU, r.Suite, r.Scope, r.Launcher, r.Status, stamp(r.Started), r.Version, r.Command, stamp(r.Imported))
	if err != nil {
		return false, fmt.Errorf("history store %s: add run %s: %w", s.where, r.Digest, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("history store %s: add run %s: %w", s.where, r.Digest, err)
	}
	return n > 0, nil
}

// pointRow is p's values in pointColumns' order: a value that is no
// finite number, and no expected value, as NULL.
func pointRow(digest string, seq int, p Point) []any {
	var v, e any
	if !math.IsNaN(p.Value) && !math.IsInf(p.Value, 0) {
		v = p.Value
	}
	if p.Expected != nil {
		e = *p.Expected
	}
	return []any{digest, int64(seq), p.Test, p.Metric, labelsText(p.Labels), p.Size, v, p.Unit, p.Band, e,
		p.Status, p.Basis, stamp(p.At), p.Host, p.GPUUUID, p.GPUSerial, p.NIC, p.NICGUID, p.GPUModel}
}

// insertCopy is Insert for PostgreSQL: the points go in with COPY (pgx's
// CopyFrom), several times faster than INSERTs, in the transaction that
// adds the run.
func (s *sqlStore) insertCopy(ctx context.Context, r Run, points []Point) (added bool, err error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("history store %s: %w", s.where, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return false, fmt.Errorf("history store %s: %w", s.where, err)
	}
	committed := false
	defer func() {
		if !committed {
			// A cancelled ctx must not keep the rollback from running.
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if added, err = s.insertRun(ctx, conn, r); err != nil || !added {
		return false, err
	}
	err = conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("not a pgx connection: %T", dc)
		}
		_, err := c.Conn().CopyFrom(ctx, pgx.Identifier{"points"}, strings.Split(strings.ReplaceAll(pointColumns, " ", ""), ","),
			pgx.CopyFromSlice(len(points), func(i int) ([]any, error) { return pointRow(r.Digest, i, points[i]), nil }))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("history store %s: add the points of run %s: %w", s.where, r.Digest, err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return false, fmt.Errorf("history store %s: add run %s: %w", s.where, r.Digest, err)
	}
	committed = true
	return true, nil
}

// pointsQuery is the SELECT of Points for f, with ? placeholders, and its
// arguments.
func pointsQuery(f Filter) (string, []any) {
	var where []string
	var args []any
	add := func(cond string, vals ...string) {
		where = append(where, cond)
		for _, v := range vals {
			args = append(args, v)
		}
	}
	if f.Host != "" {
		add("p.host = ?", f.Host)
	}
	// One column each, not an OR of two: an OR keeps SQLite from the
	// index of either with the test's.
	switch {
	case f.GPU == "":
	case strings.Contains(f.GPU, "-"):
		add("p.gpu_uuid = ?", f.GPU)
	default:
		add("p.gpu_serial = ?", f.GPU)
	}
	switch {
	case f.NIC == "":
	case isGUID(f.NIC):
		add("p.nic_guid = ?", f.NIC)
	default:
		add("p.nic = ?", f.NIC)
	}
	if f.Test != "" {
		add("p.test = ?", f.Test)
	}
	if f.Metric != "" {
		add("p.metric = ?", f.Metric)
	}
	if f.Digest != "" {
		add("p.digest = ?", f.Digest)
	}
	query := "SELECT p.digest, p.seq, p.test, p.metric, p.labels, p.size, p.value, p.unit, p.band, p.expected, p.status, p.basis, p.at, p.host, p.gpu_uuid, p.gpu_serial, p.nic, p.nic_guid, p.gpu_model, r.sku, r.folder, r.command FROM points p JOIN runs r ON r.digest = p.digest"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY p.at, p.digest, p.seq"
	return query, args
}

// Points implements Store.
func (s *sqlStore) Points(ctx context.Context, f Filter) ([]Point, error) {
	query, args := pointsQuery(f)
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("history store %s: read points: %w", s.where, err)
	}
	defer rows.Close()
	var out []Point
	for rows.Next() {
		var p Point
		var labels, at string
		var v, e sql.NullFloat64
		if err := rows.Scan(&p.Digest, &p.Seq, &p.Test, &p.Metric, &labels, &p.Size, &v, &p.Unit, &p.Band, &e, &p.Status, &p.Basis, &at,
			&p.Host, &p.GPUUUID, &p.GPUSerial, &p.NIC, &p.NICGUID, &p.GPUModel, &p.SKU, &p.Folder, &p.Command); err != nil {
			return nil, fmt.Errorf("history store %s: read points: %w", s.where, err)
		}
		p.Value = math.NaN()
		if v.Valid {
			p.Value = v.Float64
		}
		if e.Valid {
			p.Expected = &e.Float64
		}
		if labels != "{}" {
			if err := json.Unmarshal([]byte(labels), &p.Labels); err != nil {
				return nil, fmt.Errorf("history store %s: point %d of run %s: labels %q: %w", s.where, p.Seq, p.Digest, labels, err)
			}
		}
		p.At = unstamp(at)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history store %s: read points: %w", s.where, err)
	}
	return out, nil
}

// Runs implements Store.
func (s *sqlStore) Runs(ctx context.Context) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT digest, folder, sku, suite, scope, launcher, status, started, version, command, imported FROM runs ORDER BY started, digest")
	if err != nil {
		return nil, fmt.Errorf("history store %s: read runs: %w", s.where, err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		var r Run
		var started, imported string
		if err := rows.Scan(&r.Digest, &r.Folder, &r.SKU, &r.Suite, &r.Scope, &r.Launcher, &r.Status, &started, &r.Version, &r.Command, &imported); err != nil {
			return nil, fmt.Errorf("history store %s: read runs: %w", s.where, err)
		}
		r.Started, r.Imported = unstamp(started), unstamp(imported)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history store %s: read runs: %w", s.where, err)
	}
	return out, nil
}

// isGUID says s reads as a GUID: hex digits, with an optional 0x and
// colons.
func isGUID(s string) bool {
	h := strings.ReplaceAll(strings.TrimPrefix(strings.ToLower(s), "0x"), ":", "")
	return h != "" && strings.Trim(h, "0123456789abcdef") == ""
}
