"""The editors' word lists are highlight.py's (no browser): the JupyterLab extension as
shipped (accel_kernel/labextension/, rebuilt by scripts/build_labextension) and kernel.js as
the kernelspec installs it. Also: the kernel names the extension's language, and installing
the kernelspec installs the extension where JupyterLab finds it."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from accel_kernel.kernel.highlight import word_lists
from accel_kernel.kernel.install import (LABEXTENSION_NAME, install_kernelspec,
                                         write_kernelspec)

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "accel_kernel" / "labextension"
REBUILD = "the word lists changed: rebuild the extension (bash scripts/build_labextension)"


def shipped_words() -> dict[str, list[str]]:
    """The word lists in the shipped bundle (a JSON string that stays whole when minified)."""
    found = []
    for script in sorted((SHIPPED / "static").glob("*.js")):
        text = script.read_text()
        start = text.find('{"accel_words":1,')
        if start >= 0:
            words, _ = json.JSONDecoder().raw_decode(text, start)
            found.append(words)
    assert len(found) == 1, f"expected the word lists in one bundle file, found {len(found)}"
    words = found[0]
    del words["accel_words"]
    return words


def test_the_shipped_extension_has_highlight_py_word_lists():
    assert shipped_words() == word_lists(), REBUILD


def test_the_shipped_extension_is_the_one_pyproject_and_install_name():
    package = json.loads((SHIPPED / "package.json").read_text())
    assert package["name"] == LABEXTENSION_NAME
    assert (SHIPPED / package["jupyterlab"]["_build"]["load"]).is_file()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    data_files = pyproject["tool"]["setuptools"]["data-files"]
    assert data_files[f"share/jupyter/labextensions/{LABEXTENSION_NAME}"] == \
        ["accel_kernel/labextension/package.json"]
    # the sources' package is the same extension
    source = json.loads((REPO / "labextension" / "package.json").read_text())
    assert source["name"] == LABEXTENSION_NAME
    assert source["jupyterlab"]["outputDir"] == "../accel_kernel/labextension"


def test_the_kernel_names_the_extensions_language():
    from accel_kernel.kernel.kernel import AccelKernel
    info = AccelKernel.language_info
    assert info["codemirror_mode"]["name"] == info["name"] == "accel"
    assert info["mimetype"] == "text/x-accel" and info["pygments_lexer"] == "accel"
    bundle = "".join(p.read_text() for p in (SHIPPED / "static").glob("*.js"))
    assert '"text/x-accel"' in bundle and 'name:"accel"' in bundle


def test_kernel_js_gets_highlight_py_word_lists(tmp_path):
    write_kernelspec(tmp_path)
    script = (tmp_path / "kernel.js").read_text()
    marker = "/* ACCEL_WORDS */ "
    start = script.index(marker) + len(marker)
    words, _ = json.JSONDecoder().raw_decode(script, start)
    assert words == word_lists()


def test_install_kernelspec_installs_the_extension_where_jupyterlab_finds_it(tmp_path):
    install_kernelspec(prefix=str(tmp_path))
    installed = tmp_path / "share" / "jupyter" / "labextensions" / LABEXTENSION_NAME
    assert sorted(p.name for p in (installed / "static").iterdir()) == \
        sorted(p.name for p in (SHIPPED / "static").iterdir())
    install_kernelspec(prefix=str(tmp_path))        # again: replaces the copy
    assert (installed / "package.json").is_file()
    if importlib.util.find_spec("jupyterlab") is None:
        pytest.skip("JupyterLab is not installed here")
    env = dict(os.environ, JUPYTER_PATH=str(tmp_path / "share" / "jupyter"),
               JUPYTER_CONFIG_DIR=str(tmp_path / "config"))
    listed = subprocess.run([sys.executable, "-m", "jupyter", "labextension", "list"],
                            env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in (listed.stdout + listed.stderr).splitlines()
             if LABEXTENSION_NAME in line]
    assert lines and "enabled" in lines[0] and "OK" in lines[0], listed.stderr
