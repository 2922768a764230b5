"""Kubernetes' own rules, in one place: names, quantities, env names, text, pod specs.

A leaf package (standard library only, nothing from trainkit) shared by the
pydantic models (``trainkit.model.fields``) and the manifest validator
(``trainkit.validate``), so a rule cannot drift between what a definition may
say and what a manifest may hold. Every pattern matches the *whole* string
(``re.fullmatch``): Python's ``$`` also matches before a trailing newline,
Go's (which the API server uses) does not, so ``"x\\n"`` must be refused.
"""
