"""The EntityRLS example of docs/predictors.md runs as written."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_entity_example_in_docs_runs(capsys):
    text = (ROOT / "docs" / "predictors.md").read_text(encoding="utf-8")
    section = text.split("## Per-model terms: entities and EntityRLS", 1)[1]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    exec(compile(code, "docs/predictors.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert "sensitivity" in out[0] and out[2] == "1.0"
    assert "resnet50" in out[-1] and "vgg19" in out[-1]
