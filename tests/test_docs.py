"""Docs stay true to the code: every registered model has a page with the required sections and
documents every parameter; the CLI help lists every command the README shows."""

import json
import os
import re

import pytest

from conftest import REPO, qoelab_cli
from qoelab import _core

SECTIONS = ["Model", "Reference", "Parameters", "Deviations", "Validation"]
MODELS = [(f, e) for f in ("aqm", "cc", "abr", "data_plane", "flow_controller") for e in json.loads(_core.describe(f))]


@pytest.mark.parametrize("family,entry", MODELS, ids=[f"{f}-{e['name']}" for f, e in MODELS])
def test_model_page(family, entry):
    path = os.path.join(REPO, "docs", "models", f"{family}-{entry['name']}.md")
    assert os.path.exists(path), f"missing {path}"
    text = open(path).read()
    heads = re.findall(r"^#+\s*(.+?)\s*$", text, flags=re.M)
    for s in SECTIONS:
        assert any(h.lower().startswith(s.lower()) for h in heads), f"{path}: no '{s}' section"
    for p in entry["params"]:
        assert p["name"] in text, f"{path}: parameter {p['name']} is not documented"


@pytest.mark.parametrize("name", [p[0] for p in _core.pageload_policies()])
def test_pageload_policy_page(name):
    path = os.path.join(REPO, "docs", "models", f"policy-{name}.md")
    assert os.path.exists(path), f"missing {path}"
    text = open(path).read()
    heads = re.findall(r"^#+\s*(.+?)\s*$", text, flags=re.M)
    for s in SECTIONS:
        assert any(h.lower().startswith(s.lower()) for h in heads), f"{path}: no '{s}' section"
    assert f"policy/{name.replace('-', '_')}.rs" in text, f"{path}: does not name its code"


def test_pageload_model_page_documents_every_option():
    text = open(os.path.join(REPO, "docs", "models", "pageload.md")).read()
    for opt in ("mss", "iw_segments", "handshake_rtts", "tls_rtts", "reuse_rtts", "idle_timeout",
                "max_per_origin", "max_total", "sharing", "waterfill", "maxmin"):
        assert f"`{opt}`" in text, f"docs/models/pageload.md: option {opt} is not documented"


def test_tcp_page_documents_every_option():
    text = open(os.path.join(REPO, "docs", "models", "tcp.md")).read()
    for p in json.loads(_core.describe_tcp()):
        assert p["name"] in text, f"docs/models/tcp.md: option {p['name']} is not documented"


def test_readme_commands_exist():
    readme = open(os.path.join(REPO, "README.md")).read()
    assert "make demo" in readme and "make test" in readme
    help_text = qoelab_cli("--help").stdout
    for cmd in set(re.findall(r"^qoelab (\w+)", readme, flags=re.M)):
        assert cmd in help_text, f"README shows `qoelab {cmd}` but --help does not list it"
