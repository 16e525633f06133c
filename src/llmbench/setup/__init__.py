"""In the setup jobs, before the first train job: container images, the training venv."""
