-- Migration 1: the runs imported and their judged points.
-- Shared by SQLite and PostgreSQL: plain types both read the same way
-- (TEXT, BIGINT, DOUBLE PRECISION), times as fixed-width UTC text
-- (2006-01-02T15:04:05.000000000Z) that sorts as it reads, no
-- auto-increment (a point's key is its run's digest and its number in the
-- run, which makes an import idempotent without a sequence).

CREATE TABLE runs (
    digest      TEXT PRIMARY KEY,   -- sign-off digest of the folder: sha256: and the hex SHA-256 of its manifest.json
    folder      TEXT NOT NULL,      -- absolute path of the results folder when imported
    sku         TEXT NOT NULL,
    suite       TEXT NOT NULL,
    scope       TEXT NOT NULL,      -- NODESxGPUS
    launcher    TEXT NOT NULL,
    status      TEXT NOT NULL,      -- the run's verdict, recomputed from its tests
    started     TEXT NOT NULL,
    version     TEXT NOT NULL,      -- gpuaccept version that made the run
    command     TEXT NOT NULL,      -- run, check, health or localise
    imported    TEXT NOT NULL
);

CREATE TABLE points (
    digest      TEXT NOT NULL REFERENCES runs (digest),
    seq         BIGINT NOT NULL,    -- the point's number in its run, from 0
    test        TEXT NOT NULL,      -- PLUGIN.TEST
    metric      TEXT NOT NULL,
    labels      TEXT NOT NULL,      -- canonical JSON object (sorted keys), {} for none
    size        BIGINT NOT NULL,    -- message size in bytes, 0 when not per size
    value       DOUBLE PRECISION,   -- in unit; NULL for a value that is no finite number
    unit        TEXT NOT NULL,
    band        TEXT NOT NULL,
    expected    DOUBLE PRECISION,   -- baseline reference, NULL when none
    status      TEXT NOT NULL,      -- pass, warn, fail, error, skip
    basis       TEXT NOT NULL,      -- golden, reference, floor or empty
    at          TEXT NOT NULL,      -- when the test started
    host        TEXT NOT NULL,
    gpu_uuid    TEXT NOT NULL,
    gpu_serial  TEXT NOT NULL,
    nic         TEXT NOT NULL,      -- adapter name (mlx5_3)
    nic_guid    TEXT NOT NULL,
    PRIMARY KEY (digest, seq)
);

CREATE INDEX points_by_serial ON points (gpu_serial, test, metric, at);
CREATE INDEX points_by_uuid   ON points (gpu_uuid, at);
CREATE INDEX points_by_host   ON points (host, test, metric, at);
CREATE INDEX points_by_nic    ON points (nic_guid, test, metric, at);
CREATE INDEX points_by_test   ON points (test, metric, at);
CREATE INDEX runs_by_started  ON runs (started);
