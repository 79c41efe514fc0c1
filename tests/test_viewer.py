"""The viewer's standalone HTML of the trot and the jump. The trot's page, opened in headless
Chromium, draws the robot (the page with it differs from the page without it where the robot
stands) and moves it (where it is drawn changes between two moments): the page's code is the
same for every gait, and loading it builds the robot's 420k triangles in software, so one gait
is opened, once per page, its moments taken over the DevTools protocol. The live viewer serves
the scene."""

from __future__ import annotations

import base64
import fcntl
import io
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import required_program
from PIL import Image

from liftoff.problems import viewer
from liftoff.problems.cli import main
from liftoff.problems.studies.runs import save_run, solve_config
from liftoff.problems.tasks.config import load_config
from liftoff.problems.viewer.scene import scene

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
SIZE = (240, 180)
MOMENTS = (400, 1000)  # ms of page time at which the screenshots are taken


def chromium() -> str:
    """The browser's path (:func:`conftest.required_program`: CI installs it)."""
    why = "the viewer test opens the HTML in headless Chromium: apt-get install chromium (.ci/run does)"
    return required_program(("chromium", "chromium-browser", "google-chrome"), why)


@pytest.fixture(scope="module")
def browser() -> str:
    return chromium()  # before the pages are made


MOVE_TO_3_AND_4 = (  # argv: two file descriptors, then a command, run with them as its fds 3 and 4
    "import os, sys; a, b = map(int, sys.argv[1:3]); os.dup2(a, 3); os.dup2(b, 4); os.close(a); os.close(b); "
    "os.execvp(sys.argv[3], sys.argv[3:])"
)


def screenshots(browser: str, page: Path, moments) -> list:
    """The page's screenshots at ``moments`` (ms of page time), from one load: the browser
    driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: commands on its
    fd 3, replies on its fd 4, each a JSON message ended by a NUL byte), its virtual time let
    run to each moment in turn, as ``--virtual-time-budget`` runs it to one."""
    commands, replies = os.pipe(), os.pipe()
    # the browser's ends, numbered above 3 and 4; a Python process moves them there and becomes the browser
    ends = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (commands[0], replies[1])]
    for fd in (commands[0], replies[1]):
        os.close(fd)
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader"]
    command += ["--enable-unsafe-swiftshader", "--remote-debugging-pipe", "about:blank"]
    process = subprocess.Popen(
        [sys.executable, "-c", MOVE_TO_3_AND_4, *map(str, ends), *command],
        pass_fds=ends,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for fd in ends:
        os.close(fd)
    deadline, pending, sent = time.monotonic() + 180, b"", 0

    def receive() -> dict:
        nonlocal pending
        while b"\0" not in pending:
            ready, _, _ = select.select([replies[0]], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(replies[0], 1 << 20) if ready else b""
            assert chunk, "the browser closed its pipe or did not answer within 180 s"
            pending += chunk
        message, pending = pending.split(b"\0", 1)
        return json.loads(message)

    def call(method, session=None, **params) -> dict:
        nonlocal sent
        sent += 1
        message = {"id": sent, "method": method, "params": params} | ({"sessionId": session} if session else {})
        os.write(commands[1], json.dumps(message).encode() + b"\0")
        while (reply := receive()).get("id") != sent:
            pass
        assert "error" not in reply, reply
        return reply["result"]

    try:
        # a tab of its own, whatever the browser opened
        target = call("Target.createTarget", url="about:blank")["targetId"]
        tab = call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        call(
            "Emulation.setDeviceMetricsOverride", tab, width=SIZE[0], height=SIZE[1], deviceScaleFactor=1, mobile=False
        )
        call("Emulation.setVirtualTimePolicy", tab, policy="pause")
        call("Page.navigate", tab, url=page.as_uri())
        shots, now = [], 0
        for ms in moments:
            call("Emulation.setVirtualTimePolicy", tab, policy="pauseIfNetworkFetchesPending", budget=ms - now)
            while receive().get("method") != "Emulation.virtualTimeBudgetExpired":
                pass
            now = ms
            png = base64.b64decode(call("Page.captureScreenshot", tab, format="png")["data"])
            shots.append(np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int))
        return shots
    finally:
        os.close(commands[1])
        os.close(replies[0])
        process.kill()
        process.wait()


def drawn(a, b):
    """Pixels where two screenshots differ."""
    return np.abs(a - b).max(axis=2) > 24


@pytest.fixture(scope="module", params=["trot", "jump"])
def pages(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    run = solve_config(load_config(CONFIGS / f"anymal_{request.param}.yaml"))
    assert run.result.converged
    path = save_run(run, folder / "run.npz")
    loaded = viewer.load(path)
    robot = viewer.export_html(loaded, folder / "robot.html")
    return path, robot, viewer.export_html(loaded, folder / "empty.html", robot=False)


@pytest.mark.heavy
@pytest.mark.parametrize("pages", ["trot"], indirect=True)
def test_the_exported_page_shows_the_robot_moving(browser, pages):
    _, robot, empty = pages
    masks = []
    for ms, with_robot, without in zip(
        MOMENTS, screenshots(browser, robot, MOMENTS), screenshots(browser, empty, MOMENTS)
    ):
        mask = drawn(with_robot, without)
        assert mask.mean() > 0.01, f"the robot covers {100 * mask.mean():.2f}% of the image at {ms} ms"
        masks.append(mask)
    moved = masks[0] ^ masks[1]
    assert moved.sum() > 0.1 * masks[0].sum(), "the robot did not move between the two moments"


@pytest.mark.parametrize("ci, outcome", [(None, pytest.skip.Exception), ("true", pytest.fail.Exception)])
def test_without_chromium_the_browser_test_is_skipped_outside_ci_only(monkeypatch, ci, outcome):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("CI", raising=False)
    if ci:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="apt-get install chromium"):
        chromium()


def test_view_writes_the_page_and_refuses_a_bad_file(pages, tmp_path, capsys):
    result, _, _ = pages
    out = tmp_path / "view.html"
    assert main(["view", str(result), "--html", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "MeshCat.Viewer" in text and len(text) > 1e6
    (tmp_path / "bad.npz").write_bytes(b"not a results file")
    assert main(["view", str(tmp_path / "bad.npz"), "--html", str(out)]) == 2
    assert "bad.npz: not a liftoff results file (those are .npz archives)" in capsys.readouterr().err


def test_live_viewer_serves_the_scene(pages):
    result, _, _ = pages
    visualizer = viewer.show(viewer.load(result))
    try:
        assert visualizer.url().startswith("http://127.0.0.1:")
        assert "MeshCat.Viewer" in visualizer.static_html()  # the server holds the scene
    finally:
        visualizer.window.server_proc.kill()


def test_the_viewer_plays_a_polishing_run_with_its_surface_and_force(tmp_path):
    """A polishing MPC run (here 0.1 s on liftoff's plant): the reduced Talos, the table, the
    tool's measured force, the circle as reference points."""
    path = tmp_path / "p.yaml"
    path.write_text("task: polishing\nmpc: {horizon: 10, duration: 0.1}\nplant: {engine: liftoff}\n", encoding="utf-8")
    assert main(["mpc", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    motion = viewer.load(tmp_path / "out" / "run.npz")
    assert motion.robot == "talos" and motion.q.shape == (5, 6) and motion.ground is None
    ((position, rotation, _),) = motion.surfaces
    np.testing.assert_allclose(rotation[:, 2], [0.0, 0.0, 1.0])
    frame, force = motion.forces["tool"]
    assert frame == "tool" and force.shape == (5, 3) and np.all(force[1:, 2] > 20)
    assert np.allclose((motion.points - position) @ rotation[:, 2], 0.0)  # the circle lies on the surface
    commands = [c.lower() for c in scene(motion)]
    assert any("surfaces/0" in str(c.get("path", "")) for c in commands)
