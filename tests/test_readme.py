"""The README's Python snippet runs as printed (from the repository root, as the README assumes)."""

import os
import re

from conftest import REPO


def test_readme_python_block_runs(monkeypatch):
    readme = open(os.path.join(REPO, "README.md")).read()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks, "README has no python block"
    monkeypatch.chdir(REPO)
    for code in blocks:
        ns: dict = {}
        exec(compile(code, "README.md", "exec"), ns)
        res = ns["res"]
        assert len(res.table("segments")) > 0 and len(res.table("flows")) > 0
        assert res.summary["clients"][0]["qoe_mean"] == res.summary["clients"][0]["qoe_mean"]   # not NaN
