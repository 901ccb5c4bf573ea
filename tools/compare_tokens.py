#!/usr/bin/env python3
"""Compares npufuse's token stream with CPython's tokenize module.

Usage: tools/compare_tokens.py LEX_DUMP FILE_OR_DIR...
LEX_DUMP is the lex_dump program (bench/lex). The two token models agree
once our PEP 701 f-string pieces are folded back into the one STRING token
that Python 3.11's tokenize produces, keywords are read as NAME and
backslash continuations (not tokens in CPython) are dropped. Files that
CPython cannot tokenize are skipped. Prints each first difference and a
summary; exits 1 if any file differs.
"""
import io
import os
import subprocess
import sys
import tokenize


def cpython_tokens(path):
    with open(path, "rb") as f:
        data = f.read()
    lines = data.decode("utf-8", errors="replace").split("\n")

    def byte_pos(pos):
        # tokenize counts characters; our columns are UTF-8 bytes like CPython's ast.
        line, col = pos
        if 1 <= line <= len(lines):
            return (line, len(lines[line - 1][:col].encode("utf-8", errors="surrogatepass")))
        return pos

    out = []
    for t in tokenize.tokenize(io.BytesIO(data).readline):
        kind = tokenize.tok_name[t.type]
        if kind == "ENCODING":
            continue
        if kind == "ERRORTOKEN":
            return None
        if kind in ("NEWLINE", "NL"):
            # tokenize ends a line end on its own line (and invents a
            # 1-column range at EOF); ours ends at the next line's start.
            out.append((kind, byte_pos(t.start), None))
            continue
        out.append((kind, byte_pos(t.start), byte_pos(t.end)))
    return out


def our_tokens(lines):
    out, depth, fstart = [], 0, None
    for line in lines:
        kind, b, e = line.split()
        b = tuple(map(int, b.split(",")))
        e = tuple(map(int, e.split(",")))
        if kind == "FSTRING_START":
            if depth == 0:
                fstart = b
            depth += 1
            continue
        if kind == "FSTRING_END":
            depth -= 1
            if depth == 0:
                out.append(("STRING", fstart, e))
            continue
        if depth > 0 or kind == "CONTINUATION":
            continue
        if kind == "KEYWORD":
            kind = "NAME"
        out.append((kind, b, e))
    return out


def main():
    dump, files = sys.argv[1], []
    for arg in sys.argv[2:]:
        if os.path.isdir(arg):
            for root, _, names in sorted(os.walk(arg)):
                files.extend(os.path.join(root, n) for n in sorted(names) if n.endswith(".py"))
        else:
            files.append(arg)
    result = subprocess.run([dump] + files, capture_output=True, text=True, errors="replace")
    per_file, current = {}, None
    for line in result.stdout.splitlines():
        if line.startswith("FILE "):
            current = line[5:]
            per_file[current] = []
        elif line.startswith("ERROR "):
            per_file[current] = line
        else:
            per_file[current].append(line)
    same = differ = skipped = 0
    for path in files:
        try:
            expected = cpython_tokens(path)
        except (SyntaxError, tokenize.TokenError, UnicodeDecodeError, IndentationError):
            expected = None
        ours = per_file.get(path)
        if expected is None:
            skipped += 1
            continue
        if isinstance(ours, str) or ours is None:
            print(f"{path}: we failed: {ours}")
            differ += 1
            continue
        got = our_tokens(ours)
        for i, (a, b) in enumerate(zip(expected, got)):
            if a[0] != b[0] or a[1] != b[1] or (a[2] is not None and a[2] != b[2]):
                print(f"{path}: token {i}: cpython {a} ours {b}")
                differ += 1
                break
        else:
            if len(expected) != len(got):
                print(f"{path}: {len(expected)} cpython tokens, {len(got)} ours; tail {expected[-3:]} vs {got[-3:]}")
                differ += 1
            else:
                same += 1
    print(f"same {same}, differ {differ}, skipped {skipped}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
