"""Where tables become pages (aggregate, plot jobs, proof kit): HTML, figures."""
