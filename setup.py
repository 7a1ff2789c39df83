"""The wheel's packages: every app, the floor under them (common), and the checkout's templates/ installed
as docsmcp_site/templates/ (settings.TEMPLATES finds them there when no checkout is around). Metadata lives in pyproject.toml."""

from setuptools import find_packages, setup

APPS = ["docsmcp_site", "common", "corpus", "mcp_endpoint", "evals", "insights", "retrieval"]

setup(
    packages=[*find_packages(include=[f"{app}*" for app in APPS] + APPS), "docsmcp_site.templates"],
    package_dir={"docsmcp_site.templates": "templates"},
)
