"""`bash scripts/run` opens working copies of the notebooks (work/notebooks/), made once and never
overwritten, so the shipped notebooks/ stay clean (issue 16). Run on a copy of the scripts in a
temporary repository: nothing is installed and no JupyterLab starts."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def make_copies(root: Path) -> str:
    done = subprocess.run(["bash", "-c", ". scripts/run && make_working_copies"], cwd=root,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_working_copies_are_made_once_and_never_overwritten(tmp_path):
    (tmp_path / "scripts").mkdir()
    for script in ("run", "setup"):
        shutil.copy(REPO / "scripts" / script, tmp_path / "scripts" / script)
    shipped = tmp_path / "notebooks"
    shipped.mkdir()
    (shipped / "00-tour.ipynb").write_text("shipped tour")
    (shipped / "data.json").write_text("[1, 2]")
    said = make_copies(tmp_path)
    work = tmp_path / "work" / "notebooks"
    assert (work / "00-tour.ipynb").read_text() == "shipped tour"
    assert (work / "data.json").read_text() == "[1, 2]"
    assert "working copy: work/notebooks/00-tour.ipynb" in said
    (work / "00-tour.ipynb").write_text("the user's saved tour")      # JupyterLab autosaves
    (shipped / "00-tour.ipynb").write_text("a newer shipped tour")
    (shipped / "06-gpu.ipynb").write_text("a new notebook")
    said = make_copies(tmp_path)
    assert (work / "00-tour.ipynb").read_text() == "the user's saved tour"   # never overwritten
    assert (work / "06-gpu.ipynb").read_text() == "a new notebook"          # a new one arrives
    assert "00-tour" not in said
    (work / "00-tour.ipynb").unlink()                  # deleting a copy brings the shipped back
    make_copies(tmp_path)
    assert (work / "00-tour.ipynb").read_text() == "a newer shipped tour"


def test_jupyterlab_opens_the_copies_and_the_headless_run_the_shipped_notebooks():
    text = (REPO / "scripts" / "run").read_text()
    assert 'cd "$WORK_NOTEBOOKS"' in text and "lab ${root_flag" in text
    assert "for notebook in notebooks/*.ipynb" in text       # --headless: the shipped ones
    assert "work/" in (REPO / ".gitignore").read_text().split()


def test_the_set_up_makes_jupyterlab_save_widget_state(tmp_path):
    """So a saved `%step`/`%stages` output shows when reopened without a kernel (issue 16;
    tests/browser/test_tour.py checks what that gives in JupyterLab)."""
    import json
    import sys
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup", tmp_path / "scripts" / "setup")
    overrides = tmp_path / ".venv" / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    plugin = "@jupyter-widgets/jupyterlab-manager:plugin"

    def set_up() -> dict:
        done = subprocess.run(["bash", "-c", f". scripts/setup && VENV_PYTHON={sys.executable} "
                                             "setup_lab_settings"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return json.loads(overrides.read_text())

    news = "@jupyterlab/apputils-extension:notification"
    assert set_up() == {plugin: {"saveState": True}, news: {"fetchNews": "false"}}
    # a user's overrides stay, and so does a choice already made there
    overrides.write_text(json.dumps({"other:plugin": {"x": 1}, plugin: {"saveState": False}}))
    assert set_up() == {"other:plugin": {"x": 1}, plugin: {"saveState": False},
                        news: {"fetchNews": "false"}}
    assert "setup_lab_settings" in (REPO / "scripts" / "setup").read_text().split("setup_all()")[1]
