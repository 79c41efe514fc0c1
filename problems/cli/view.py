"""``liftoff view RESULT``: a results file in meshcat, live or as one HTML page."""

from __future__ import annotations

import time

from .arguments import positive_float


def add_parser(commands) -> None:
    p = commands.add_parser(
        "view",
        help="watch a results file in a browser (meshcat), or export it as one HTML file",
        description="Animate a results file (liftoff solve, compare or mpc): the robot's meshes, the contact forces "
        "(red arrows), the friction pyramids of the feet in contact (blue) and the planned swing-foot positions "
        "(yellow). Live through a local meshcat server, or with --html as a standalone page that plays alone.",
    )
    p.add_argument("result", metavar="RESULT", help="a results file (.npz)")
    p.add_argument("--html", metavar="FILE", help="write a standalone HTML page instead of serving it")
    p.add_argument("--speed", type=positive_float, default=1.0, metavar="X", help="playback speed (default 1)")
    p.set_defaults(run=run)


def run(args) -> int:
    from liftoff.problems import viewer
    from liftoff.problems.files import check_output

    shown = viewer.load(args.result)
    if args.html:
        path = viewer.export_html(shown, check_output(args.html), args.speed)
        print(f"wrote {path} (open it in a browser: the motion plays on a loop)")
        return 0
    visualizer = viewer.show(shown, args.speed)
    try:
        print(f"the motion plays at {visualizer.url()}; Ctrl-C to stop", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:  # the way to stop it: a normal end
        print("\nstopped the viewer", flush=True)
        return 0
    finally:
        server = getattr(visualizer.window, "server_proc", None)
        if server is not None:
            server.kill()
