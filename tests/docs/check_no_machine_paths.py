#!/usr/bin/env python3
"""The documentation and the data folders name no folder of the machine they
were written on: a reader could not run such a command as written. Folders
outside the repository are written as variables the text defines ($REAL for
real model files, $SHARED for the shared reference folder beside the
repository). System paths every Debian machine has (/usr, /tmp, /dev, /etc,
/proc) are fine."""
import os
import re
import sys

ROOTS = ["docs", "README.md", "rules", "chains", "catalog", "python"]
# An absolute path under a folder that belongs to one machine or one user.
MACHINE_PATH = re.compile(r"(?<![\w.~$-])/(work|home|root|mnt|media|opt|srv|Users|data|scratch)/[\w.-]")
TEXT = (".md", ".py", ".toml", ".txt", ".json", ".yaml", ".yml", ".cfg")


def files(source):
    for root in ROOTS:
        path = os.path.join(source, root)
        if os.path.isfile(path):
            yield path
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for name in filenames:
                if name.endswith(TEXT):
                    yield os.path.join(dirpath, name)


def main():
    source = os.path.abspath(sys.argv[1])
    found = []
    for path in files(source):
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                for m in MACHINE_PATH.finditer(line):
                    found.append(f"{os.path.relpath(path, source)}:{number}:{m.start() + 1}: machine path "
                                 f"{line[m.start():].split()[0]!r}: write it as a variable the text defines")
    for f in found:
        print(f)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
