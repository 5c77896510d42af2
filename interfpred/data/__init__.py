"""The input tables: traces, solo profiles, measurement runs, entities and counters; columnar
I/O; Nsight Compute ingestion (:mod:`interfpred.data.ingest`); real measured datasets shipped with
the package (:mod:`interfpred.data.datasets`)."""
