"""Which lines of given files ran: the evidence that a check exercised a patch.

    with LinesRun([patched_path]) as trace:
        ...  # import the patched module, build the model, run it
    trace.lines()  # {path: sorted line numbers that ran}

A global trace function returns a local tracer only for frames whose code comes from one
of the watched files, so code elsewhere (torch, transformers) runs untraced after its
call event. A tracer someone else installed (a coverage tool) is put back on exit.
"""
import os
import sys
import threading


class LinesRun:
    def __init__(self, paths):
        self._watched = {os.path.realpath(p): p for p in paths}
        self._seen = {p: set() for p in paths}
        self._previous = None
        self._by_name = {}  # co_filename -> watched path or None, resolved once per name

    def _global(self, frame, event, arg):
        if event != "call":
            return None
        name = frame.f_code.co_filename
        path = self._by_name.get(name, False)
        if path is False:
            path = self._by_name[name] = self._watched.get(os.path.realpath(name))
        if path is None:
            return None
        seen = self._seen[path]
        seen.add(frame.f_lineno)

        def local(frame, event, arg):
            if event == "line":
                seen.add(frame.f_lineno)
            return local
        return local

    def __enter__(self):
        self._previous = sys.gettrace()
        threading.settrace(self._global)
        sys.settrace(self._global)
        return self

    def __exit__(self, *exc):
        sys.settrace(self._previous)
        threading.settrace(self._previous)
        return False

    def lines(self):
        return {path: sorted(n for n in lines if n > 0) for path, lines in self._seen.items()}
