#!/usr/bin/env python3
"""Fail when README.md or docs/*.md name a file that is not in the repository.

Why: files move (docs/plugin-guide.md became docs/plugins.md, the bench/run-gpu-*.sh scripts
gave way to `bench/run SUITE`) and prose that cites them goes stale without anyone noticing.
ctest runs this ("docs: links and repository paths exist") so a rename that forgets the docs
fails the build's tests instead of misleading a reader later (issue 37).

Usage: check_docs.py REPO_ROOT. Checks, in README.md and every docs/*.md:
  * relative markdown links, [text](path), [text](path#anchor), ![alt](path) and reference
    definitions "[label]: path", resolved against the markdown file's folder; http(s):,
    mailto: and pure #anchor links are not checked;
  * repository paths in `inline code` and in fenced code blocks: whitespace-separated tokens
    that start with one of the root's real top-level entries and a slash (bench/..., docs/...),
    resolved against REPO_ROOT. Tokens with glob or placeholder characters (* ? { < [ $ ...)
    are skipped, trailing punctuation and :LINE suffixes are stripped, and build outputs
    (build/, build-gpu/, results/, bench-out/, third_party/) are not checked. A line holding
    <!-- not-a-path --> is exempt from the path check (for paths the user creates, or a
    removed file cited as history); its links are still checked.
Prints one `FILE:LINE: what is wrong` line per problem and exits 1, or a summary and exits 0.
Python 3 standard library only.
"""
import os
import re
import sys

OUTPUTS = {"build", "build-gpu", "results", "bench-out", "third_party"}
OPT_OUT = "<!-- not-a-path -->"
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?")
PLACEHOLDER = re.compile(r"[*?{}<>\[\]$%|]|\.\.\.")
PATH_CHARS = re.compile(r"^[A-Za-z0-9_.+/@=#-]+$")
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)  # http:, https:, mailto:, ...


def path_token(token, entries):
    """The repository path a code token names, or None when it does not look like one."""
    token = token.strip("\"'()[],;")
    token = re.sub(r"(?::\d+(?:-\d+)?)+$", "", token)  # file.cpp:120, file.cpp:12-30
    token = token.rstrip(".,;:!?)")
    if token.startswith("./"):
        token = token[2:]
    if not token or PLACEHOLDER.search(token) or not PATH_CHARS.match(token):
        return None
    head, slash, _ = token.partition("/")
    if not slash or head not in entries or head in OUTPUTS:
        return None  # a bare `tests` or `Makefile` is a top-level entry: it exists
    return token.split("#", 1)[0].rstrip("/")


def check_file(root, rel, entries, problems, counts):
    md_dir = os.path.dirname(os.path.join(root, rel))
    in_fence = False
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        lines = f.read().splitlines()
    for number, line in enumerate(lines, 1):
        where = f"{rel}:{number}"
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            code, prose = [line], ""
        else:
            code = [m.group(2) for m in CODE_SPAN.finditer(line)]
            prose = CODE_SPAN.sub("", line)
        targets = [m.group(1) for m in LINK.finditer(prose)]
        ref = REF_DEF.match(prose)
        if ref:
            targets.append(ref.group(1))
        for target in targets:
            if EXTERNAL.match(target) or target.startswith("#"):
                continue
            counts["links"] += 1
            path = target.split("#", 1)[0].split("?", 1)[0]
            if not os.path.exists(os.path.normpath(os.path.join(md_dir, path))):
                problems.append(f"{where}: link to a missing file: {target}")
        if OPT_OUT in line:
            continue
        for span in code:
            for token in span.split():
                path = path_token(token, entries)
                if path is None:
                    continue
                counts["paths"] += 1
                if not os.path.exists(os.path.join(root, path)):
                    problems.append(f"{where}: no such file or folder in the repository: {path}")
    if in_fence:
        problems.append(f"{rel}:{len(lines)}: a code block is never closed")


def main(argv):
    if len(argv) != 2:
        print("usage: check_docs.py REPO_ROOT", file=sys.stderr)
        return 2
    root = os.path.abspath(argv[1])
    entries = set(os.listdir(root)) - {".git"}
    docs = os.path.join(root, "docs")
    files = ["README.md"] + sorted(
        os.path.join("docs", n) for n in os.listdir(docs) if n.endswith(".md"))
    problems, counts = [], {"links": 0, "paths": 0}
    for rel in files:
        check_file(root, rel, entries, problems, counts)
    for problem in problems:
        print(problem)
    print(f"docs: {len(files)} files, {counts['links']} links, {counts['paths']} paths checked, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
