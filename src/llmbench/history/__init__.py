"""Every sweep joins a history: identity, a Hive-partitioned Parquet store, comparison
with statistics and trends (docs/history.md).

- ``sweep``: the sweep record stamped with the tables (id, cluster, date, versions, hashes)
- ``store``: ``<history>/cluster=<c>/date=<d>/sweep=<id>/{runs,steps,sweep}.parquet``
- ``select``: which sweeps (or the published references) a selector names
- ``stats``: the block bootstrap of the step-time ratio
- ``compare``: per-key verdicts and what changed in provenance
- ``trends``: step time per key over sweeps, with the reference band
"""
