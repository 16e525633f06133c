"""Every sweep joins a history: identity, a Hive-partitioned Parquet store, comparison
with statistics and trends (docs/history.md).

- ``sweep``: the sweep record stamped with the tables (id, cluster, date, versions, hashes)
- ``store``: ``<history>/cluster=<c>/date=<d>/sweep=<id>/{runs,steps,sweep}.parquet``
- ``checked``: the one reader of stored Parquet files, checked against their sha256
- ``read``: tables of many sweeps, a damaged sweep left out and named
- ``select``: which sweeps (or the published references) a selector names
- ``stats``: the block bootstrap of the step-time ratio
- ``compare``: per-key verdicts and what changed in provenance
- ``trends``: step time per key over sweeps, with the reference band
"""
