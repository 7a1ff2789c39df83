"""docs/deploy.md's shell steps do what the page says: its environment file, with the JSON value it
recommends, reaches a command intact through the documented `set -a; . file` line."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

DEPLOY_MD = ROOT / "docs" / "deploy.md"


@pytest.mark.slow
def test_the_documented_environment_file_passes_its_json_value_intact(tmp_path):
    text = DEPLOY_MD.read_text()
    assert "| xargs) .venv" not in text, "splitting the environment file at spaces breaks its JSON values"
    (line,) = set(re.findall(r"`(DOCSMCP_STORAGE_OPTIONS='\{.*?\}')`", text))
    env_file = tmp_path / "env"
    env_file.write_text(f"DJANGO_ALLOWED_HOSTS=docs.example.com\n{line}\n")
    (function,) = re.findall(r"^manage\(\) \{ .* \}$", text, flags=re.MULTILINE)
    script = tmp_path / "manage.py"
    script.write_text("import json, os, sys\n"
                      "print(json.dumps([json.loads(os.environ['DOCSMCP_STORAGE_OPTIONS']), sys.argv[1:]]))\n")
    function = (function.replace("sudo -u docsmcp ", "").replace("/etc/docsmcp/env", str(env_file))
                .replace(".venv/bin/python manage.py", f"{sys.executable} {script}"))
    done = subprocess.run(["bash", "-c", f"{function}\nmanage migrate --noinput"], capture_output=True, text=True,
                          timeout=60, check=True)
    options, argv = json.loads(done.stdout)
    assert options == {"endpoint": "https://minio.internal:9000", "region": "us-east-1"}
    assert argv == ["migrate", "--noinput"]
