"""Cold start (issue 29): imports, CLI commands and the seconds until `strongroom serve` answers,
each beside the bare library or server it is held to, in interleaved rounds of one run.

Each round, in fresh processes: `import quart, hypercorn`; `import strongroom.app`;
`strongroom --help`; `strongroom keys create` (PostgreSQL); `strongroom serve --workers N`
until `/readyz` answers (PostgreSQL and Redis), and the bare Quart app of bench/floor_app.py
under Hypercorn until `/` answers. The table: each command's median and range, and the
ratios of the medians (goals: import and readiness within 3x the bare ones; `keys create`
under 2 s). To compare with an older commit, run it from a checkout of that commit. The tree
is compiled to bytecode first, as the image is (`UV_COMPILE_BYTECODE=1`).

    .venv/bin/python bench/cold_start.py --rounds 5 --workers 2
"""

from __future__ import annotations

import compileall
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from bench import stack  # noqa: E402

BIN = Path(sys.executable).parent
QUART = "`import quart, hypercorn`"
FLOOR = "bare Quart app under Hypercorn answers /"


def timed(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of `command`, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def strongroom_commands(workers: int) -> dict[str, list[str]]:
    strongroom = str(BIN / "strongroom")
    return {
        "`import strongroom.app`": [sys.executable, "-c", "import strongroom.app"],
        "`strongroom --help`": [strongroom, "--help"],
        "`strongroom keys create` (PostgreSQL)": [
            strongroom, "keys", "create", "--tenant", "cold", "--email", "cold@example.com",
            "--name", "cold", "--environment", "test", "--scopes", "vault:read",
        ],
        f"`strongroom serve --workers {workers}` answers /readyz": [
            strongroom, "serve", "--host", "127.0.0.1", "--port", "{port}",
            "--workers", str(workers), "--metrics-port", "{metrics_port}",
        ],
    }  # fmt: skip


def run_command(
    command: list[str], env: dict[str, str], cwd: Path, limit: float
) -> tuple[float, float | None]:
    """Wall and CPU seconds of a command, or for a server the seconds until it answers."""
    if "serve" not in command and "--bind" not in command:
        return timed(command, env, cwd)
    port = stack.free_port()
    filled = [part.format(port=port, metrics_port=stack.free_port()) for part in command]
    url = f"http://127.0.0.1:{port}{'/readyz' if 'serve' in command else '/'}"
    with (
        tempfile.TemporaryDirectory() as directory,
        stack.serving(filled, url, limit, Path(directory) / "server.log", env=env, cwd=cwd) as (
            _,
            ready,
        ),
    ):
        return ready, None


def main() -> None:
    arguments = stack.parser(__doc__)
    arguments.add_argument("--rounds", type=int, default=5)
    arguments.add_argument("--workers", type=int, default=2)
    arguments.add_argument("--ready-seconds", type=float, default=120)
    args = arguments.parse_args()
    with stack.deployment("postgresql", "cold") as deployed:
        measure(args, deployed)


def measure(args, deployed) -> None:
    """The rounds on a migrated PostgreSQL deployment, then the table."""
    compileall.compile_dir(ROOT / "strongroom", quiet=1)
    floor = {"FLOOR_DATABASE_URL": deployed.admin_url, "FLOOR_TENANT_ID": str(uuid.uuid4()),
             "FLOOR_ENVIRONMENT": "test"}  # fmt: skip
    env = stack.environment_of(deployed.settings, **floor)
    commands = {QUART: [sys.executable, "-c", "import quart, hypercorn"],
                **strongroom_commands(args.workers)}  # fmt: skip
    commands[FLOOR] = stack.floor_command("{port}", args.workers)
    walls: dict[str, list[float]] = {label: [] for label in commands}
    cpus: dict[str, list[float]] = {label: [] for label in commands}
    timed([str(BIN / "strongroom"), "tenants", "create", "cold", "--email", "cold@example.com"],
          env, ROOT)  # fmt: skip
    for _ in range(args.rounds):
        for label, command in commands.items():
            wall, cpu = run_command(command, env, ROOT, args.ready_seconds)
            walls[label].append(wall)
            if cpu is not None:
                cpus[label].append(cpu)
    print(f"\n{stack.machine()}; {args.rounds} interleaved rounds, {args.workers} workers\n")
    print(*stack.table_head("| Command | wall median (range), CPU |"), sep="\n")
    for label, values in walls.items():
        text = f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"
        print(
            stack.row(
                label, text + (f", {statistics.median(cpus[label]):.2f} s" if cpus[label] else "")
            )
        )
    median = {label: statistics.median(values) for label, values in walls.items()}
    serve = list(strongroom_commands(args.workers))[-1]
    print(
        f"\n`import strongroom.app` {median['`import strongroom.app`'] / median[QUART]:.1f}x "
        f"`import quart, hypercorn`; serve ready {median[serve] / median[FLOOR]:.1f}x the bare "
        "Quart app (goals: 3x each)"
    )


if __name__ == "__main__":
    main()
