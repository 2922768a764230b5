"""Evaluation tasks of the suite (shipped with the job's working directory)."""
