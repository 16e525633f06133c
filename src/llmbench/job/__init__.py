"""Inside one train job, around its ranks: attempts, the supervisor, records, outputs."""
