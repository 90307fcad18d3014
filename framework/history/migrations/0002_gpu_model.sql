-- Migration 2: the GPU model of each point (hardware.json's device name,
-- "NVIDIA H100 80GB HBM3"): the point's GPU's, else that of every GPU of
-- its host when they are one model; '' where the folder does not say
-- (no hardware.json, or points imported before this migration). Drift
-- never compares a part's values across GPU models or SKUs: a host name
-- such as "vm" is reused by machines of every kind.
ALTER TABLE points ADD COLUMN gpu_model TEXT NOT NULL DEFAULT '';
