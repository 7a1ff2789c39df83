"""How long queueing a task takes to fail when the broker (Redis) is unreachable: what a build or
eval run request waits before it answers 503 task_queue_unavailable.

    python bench/broker_down.py [--repeat 5] [--outages refused,silent,mute] [--ask-result]

Three kinds of outage, all on loopback: `refused`, a port nothing listens on (Redis stopped),
`silent`, a listening socket whose accept queue is full, so connections hang as they do to a host
that is down or firewalled, and `mute`, a server that accepts connections and reads commands but never
answers (a wedged Redis, or a proxy whose backend is gone). Broker and result backend are both that URL, as in a Redis
deployment. `--ask-result` publishes as the code did before tasks stopped asking for a result
(the result backend's retries then decide; with a `silent` outage they wait minutes, for the
backend has no connect timeout of its own). Prints min / median / max seconds per outage and the
error each attempt raised; needs no database (the task name is only looked up, never run).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def silent_port() -> tuple[int, list[socket.socket]]:
    """A port whose accept queue is full: a new connection's SYN goes unanswered."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    held = [listener]
    for _ in range(3):
        client = socket.socket()
        client.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            client.connect(("127.0.0.1", port))
        held.append(client)
    return port, held


def mute_port() -> int:
    """A port that accepts every connection and reads what is sent, answering nothing."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def swallow(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while conn.recv(65536):
                pass

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=swallow, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--outages", default="refused,silent,mute")
    parser.add_argument("--ask-result", action="store_true", help="publish asking for a result (the old way)")
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docsmcp_site.settings")
    os.environ["CELERY_BROKER_URL"] = "redis://127.0.0.1:1/0"  # a Redis deployment's settings; replaced below
    import django
    import kombu.pools

    django.setup()
    from kombu.exceptions import OperationalError

    from common.celery import app
    from corpus.errors import TaskQueueUnavailable
    from corpus.queue import enqueue

    app.loader.import_default_modules()
    silent, held = silent_port()
    ports = {"refused": refused_port(), "silent": silent, "mute": mute_port()}
    for outage in args.outages.split(","):
        port = ports[outage]
        url = f"redis://127.0.0.1:{port}/0"
        seconds, errors = [], set()
        for _ in range(args.repeat):
            if app._pool is not None:
                app._pool.force_close_all()
            app._pool = None
            app.amqp._producer_pool = None
            kombu.pools.reset()
            app._local.__dict__.pop("backend", None)
            os.environ["CELERY_BROKER_URL"] = url  # Celery reads the variable before its configuration
            app.conf.update(broker_url=url, result_backend=url, task_always_eager=False)
            started = time.perf_counter()
            try:
                if args.ask_result:
                    try:
                        app.tasks["corpus.run_build"].apply_async((0,), ignore_result=False)
                    except OperationalError as exc:
                        raise TaskQueueUnavailable(str(exc)) from exc
                else:
                    enqueue("corpus.run_build", 0)
            except Exception as exc:  # noqa: BLE001 - what each attempt raised is the measurement
                errors.add(f"{type(exc).__name__} ({' '.join(str(exc).split(';')[0].split())[-60:]})")
            seconds.append(time.perf_counter() - started)
        print(f"{outage:8} {'ask-result' if args.ask_result else 'no-result':10} "
              f"min {min(seconds):.2f}s median {statistics.median(seconds):.2f}s max {max(seconds):.2f}s "
              f"raised {', '.join(sorted(errors)) or 'nothing'}")
    for sock in held:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
