"""In the train job, beside its ranks on each node: the samplers and what they left."""
