"""Files the program writes survive interrupts, bad output paths are refused before the work,
and a damaged results file is one error line."""

from __future__ import annotations

import numpy as np
import pytest

from liftoff.problems.cli import main
from liftoff.problems.files import OutputError, atomic, check_output
from liftoff.problems.studies import runs
from liftoff.problems.studies.runs import load_run


def test_an_interrupted_write_leaves_the_previous_file(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("previous")
    with pytest.raises(KeyboardInterrupt):
        with atomic(path, "w") as f:
            f.write("half of the new")
            raise KeyboardInterrupt
    assert path.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary left


@pytest.mark.parametrize("bad", ["folder", "device", "under_a_file"])
def test_unwritable_paths_are_refused(tmp_path, bad):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    path = {"folder": tmp_path / "folder", "device": "/dev/null", "under_a_file": tmp_path / "file" / "x.npz"}[bad]
    with pytest.raises(OutputError, match="not a regular file|cannot write there|file is not a folder"):
        check_output(path)


def test_a_path_under_a_file_names_the_file(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match=f"^{tmp_path}/file/a/x.npz: {tmp_path}/file is not a folder$"):
        check_output(tmp_path / "file" / "a" / "x.npz")


def test_an_interrupted_save_keeps_the_previous_results_file(tiny, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run.npz"
    assert main(["solve", tiny, "--json", "--out", str(out)]) == 0
    before = out.read_bytes()

    def interrupted(file, **arrays):
        file.write(b"PK\x03\x04 partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez_compressed", interrupted)
    assert main(["solve", tiny, "--json", "--out", str(out)]) == 130
    assert out.read_bytes() == before
    assert load_run(out)["summary"]["status"] == "converged"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.npz", "tiny.yaml"]


@pytest.mark.parametrize("out", ["{tmp}", "/dev/full", "/proc/x/y.npz"])
def test_a_bad_out_is_one_line_before_solving(tiny, tmp_path, monkeypatch, capsys, out):
    monkeypatch.setattr(runs, "prepare", lambda *a, **k: pytest.fail("kernels compiled before checking --out"))
    assert main(["solve", tiny, "--out", out.format(tmp=tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1
    assert "not a regular file" in err or "cannot write there" in err


def test_a_damaged_results_file_is_one_line(tmp_path, capsys):
    (tmp_path / "broken.npz").write_bytes(b"PK\x03\x04 not a whole archive")
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("liftoff: error:") and err.count("\n") == 1
    assert "broken.npz: not a readable liftoff results file" in err
