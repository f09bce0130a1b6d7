"""A throwaway PostgreSQL server for tests: ``initdb`` into a temporary folder, ``pg_ctl start``
listening only on 127.0.0.1 at a free port (its unix socket in the folder too), one database, and
at the end ``pg_ctl stop -m immediate`` and the folder removed, also when a test fails.

A test module imports the session fixture the way it imports :func:`tools.tool`::

    from pgserver import postgres_url as postgres_url  # a fixture: `as` tells ruff it is used

and takes ``postgres_url``, a SQLAlchemy URL ``postgresql+psycopg2://dfopt@127.0.0.1:PORT/dfopt``.
Every module importing it shares one server; tests keep apart by their study or table names.

PostgreSQL refuses to run as root. Under root (``.ci/run``, and the tests on the build machines)
the server programs run as ``nobody`` (``subprocess``'s ``user=``, no ``su`` or ``runuser`` needed)
in a folder given to it. Without the server programs (``initdb`` on PATH or in
``/usr/lib/postgresql/*/bin``) or psycopg2 the test is skipped with the reason; under
``DFOPT_REQUIRE_TOOLS=1`` (``.ci/run``) it fails instead, as in :mod:`tools`."""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest

USER = "dfopt"                 # the database superuser, trusted without a password
DATABASE = "dfopt"
SERVER_USER = "nobody"         # who runs the server when the tests run as root
# Speed over durability: the data is thrown away at the end.
SETTINGS = {"listen_addresses": "127.0.0.1", "fsync": "off", "synchronous_commit": "off",
            "full_page_writes": "off"}
TIMEOUT = 120                  # seconds for one server program; generous for a busy machine


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: the one of ``initdb`` on PATH (symlinks
    resolved), else the newest ``/usr/lib/postgresql/*/bin`` (Debian's), else None."""
    candidates = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(os.path.realpath(on_path)).parent)
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += [Path(p) for p in sorted(versions, key=_version, reverse=True)]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def _version(bindir: str) -> tuple[int, ...]:
    name = Path(bindir).parent.name
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _missing(why: str) -> NoReturn:
    """Skip the test, or fail it under DFOPT_REQUIRE_TOOLS=1 (CI)."""
    if os.environ.get("DFOPT_REQUIRE_TOOLS") == "1":
        pytest.fail(why)
    pytest.skip(why)


def free_port() -> int:
    """A TCP port on 127.0.0.1 free a moment ago (another process may take it before the server
    binds it: :func:`postgres_server` then retries once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _run_options(folder: Path) -> dict[str, Any]:
    """``subprocess.run`` keywords for a server program: as ``SERVER_USER`` when we are root, in
    ``folder`` (the user may not enter the current directory), without the caller's PG* variables."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    options: dict[str, Any] = {"cwd": folder, "env": env, "stdin": subprocess.DEVNULL,
                               "capture_output": True, "text": True, "timeout": TIMEOUT}
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER)
        options.update(user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
    return options


def _run(command: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=False, **_run_options(folder))


def _check(done: subprocess.CompletedProcess[str], log: Path | None = None) -> None:
    if done.returncode != 0:
        text = log.read_text(errors="replace") if log is not None and log.exists() else ""
        raise RuntimeError(f"{' '.join(done.args)} exited with {done.returncode}:\n"
                           f"{done.stdout}{done.stderr}{text}")


def _initdb(bindir: Path, data: Path) -> None:
    """A new cluster in ``data`` (inside the temporary folder) with the settings of this module."""
    folder = data.parent
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    _check(_run([str(bindir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "--no-sync",
                 "--no-instructions", "--encoding=UTF8", "--locale=C"], folder))
    socket_dir = str(folder).replace("'", "''")
    lines = [f"{key} = '{value}'" for key, value in SETTINGS.items()]
    lines.append(f"unix_socket_directories = '{socket_dir}'")
    with open(data / "postgresql.conf", "a") as conf:
        conf.write("\n".join(lines) + "\n")


def _start(bindir: Path, data: Path, folder: Path, attempts: int = 2) -> int:
    """Start the server at a free port, with another port when the last one was taken meanwhile
    (``attempts`` in all); the port."""
    for attempt in range(1, attempts + 1):
        port = free_port()
        log = folder / f"server-{attempt}.log"
        done = _run([str(bindir / "pg_ctl"), "start", "-D", str(data), "-l", str(log), "-w",
                     "-t", str(TIMEOUT), "-s", "-o", f"-p {port}"], folder)
        raced = done.returncode != 0 and log.exists() and "could not bind" in log.read_text(errors="replace")
        if not raced or attempt == attempts:
            _check(done, log)
            return port
    raise ValueError(f"attempts must be positive, got {attempts}")


def _stop(bindir: Path, data: Path, folder: Path) -> None:
    """Stop the server at once (``-m immediate``: no checkpoint, the data is thrown away)."""
    pid_file = data / "postmaster.pid"
    if not pid_file.exists():
        return
    pid = int(pid_file.read_text().split()[0])
    done = _run([str(bindir / "pg_ctl"), "stop", "-D", str(data), "-m", "immediate", "-w", "-s"], folder)
    if done.returncode != 0 and pid_file.exists():
        try:                  # our own postmaster, by its id, when pg_ctl could not stop it
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _create_database(port: int) -> None:
    import psycopg2

    connection = psycopg2.connect(host="127.0.0.1", port=port, user=USER, dbname="postgres")
    try:
        connection.autocommit = True      # CREATE DATABASE refuses to run in a transaction
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE DATABASE {DATABASE}")
    finally:
        connection.close()


@contextmanager
def postgres_server() -> Iterator[str]:
    """Run a throwaway server while the block runs; its SQLAlchemy URL. Skips (fails under
    DFOPT_REQUIRE_TOOLS=1) when the server programs or psycopg2 are missing."""
    bindir = find_bindir()
    if bindir is None:
        _missing("PostgreSQL's server programs not found (initdb on PATH or in "
                 "/usr/lib/postgresql/*/bin): install them, e.g. apt-get install postgresql")
    if importlib.util.find_spec("psycopg2") is None:
        _missing("psycopg2 not installed: pip install psycopg2-binary (dfopt's `postgres` extra)")
    folder = Path(tempfile.mkdtemp(prefix="dfopt-pg-"))
    data = folder / "data"
    try:
        _initdb(bindir, data)
        port = _start(bindir, data, folder)
        _create_database(port)
        yield f"postgresql+psycopg2://{USER}@127.0.0.1:{port}/{DATABASE}"
    finally:
        _stop(bindir, data, folder)
        shutil.rmtree(folder, ignore_errors=True)


# Every module that imports the fixture gets its own copy of it from pytest; they share one server,
# stopped when the last of them is torn down.
_shared: dict[str, Any] = {"users": 0}


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The SQLAlchemy URL of the session's throwaway PostgreSQL server (see the module's docs)."""
    if _shared["users"] == 0:
        stack = ExitStack()
        _shared["url"] = stack.enter_context(postgres_server())
        _shared["stack"] = stack
    _shared["users"] += 1
    try:
        yield _shared["url"]
    finally:
        _shared["users"] -= 1
        if _shared["users"] == 0:
            _shared.pop("stack").close()
