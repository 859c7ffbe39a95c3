import json

import qoelab
from qoelab import _core


def test_core_is_importable():
    assert qoelab.__version__
    names = [e["name"] for e in json.loads(_core.describe("aqm"))]
    assert "pfifo" in names
