"""In the aggregate job: run folders -> the runs and steps tables, against references."""
