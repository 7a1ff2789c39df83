"""gunicorn settings of `manage.py serve`: what each worker has loaded before it accepts.

The master loads the site and imports every view and tool profile once (`preload_app`,
`when_ready`), so the workers it forks share that code and start without importing it again;
it also loads the local embedding model when an active build needs it and one thread runs it
(mcp_endpoint.startup.preload_model), and imports Lance, LanceDB and Arrow without opening
anything (preload_index_libraries), so the workers share those pages too; last, it freezes what
it made out of the garbage collector's reach, so the workers' collections do not copy it. Nothing
it keeps holds a database connection, a thread or an index. Then gunicorn calls
`post_worker_init` in each new worker before the worker accepts connections: the worker opens and
warms the active build of every corpus (LanceDB's and Lance's runtimes start there, after the fork:
their threads do not survive one). Until then connections wait in the listening socket's queue,
or go to a worker that is already warm.
"""

preload_app = True


def when_ready(server) -> None:
    """In the master, before the first fork: import the views, and make the directory where warm
    workers say so (/health/ reports ready once all of them have)."""
    import tempfile

    from corpus.warming import serve_with
    from mcp_endpoint.startup import freeze_for_fork, import_views, preload_index_libraries, preload_model

    import_views()
    # serve names the directory (its supervising process counts the warm workers there to show progress)
    directory = server.cfg.env.get("DOCSMCP_SERVE_WARM_DIR") or tempfile.mkdtemp(prefix="docsmcp-serve-")
    serve_with(directory, server.cfg.workers)
    preload_model()
    preload_index_libraries()
    freeze_for_fork()


def on_exit(server) -> None:
    import shutil

    from corpus.warming import server_directory

    if server_directory():
        shutil.rmtree(server_directory(), ignore_errors=True)


def post_worker_init(worker) -> None:
    from mcp_endpoint.startup import serve_ready

    serve_ready(notify=worker.notify)


def worker_exit(server, worker) -> None:
    """A worker that stops cleanly leaves without running native destructors: the threads the
    embedding model's runtime keeps were the master's, not this forked child's, and joining them at
    interpreter exit aborts the worker ("terminate called ... No such process", "was sent SIGABRT!")
    on every shutdown. gunicorn calls this while the worker's own `sys.exit` unwinds; an exit with
    an error code (a boot or import error, which stops the master) keeps its code and its way out.
    The Python exit handlers still run first: the query log writes the records it holds."""
    import atexit
    import logging
    import os
    import sys

    leaving = sys.exc_info()[1]
    if isinstance(leaving, SystemExit) and leaving.code in (0, None):
        atexit._run_exitfuncs()
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
