#!/usr/bin/env python3
"""Fail when README.md or docs/*.md cite what is not there, or quote what the code and the
benchmark tables do not say.

Why: files move (docs/plugin-guide.md became docs/plugins.md, the bench/run-gpu-*.sh scripts
gave way to `bench/run SUITE`), headings are reworded, versions are bumped and benchmarks are
run again, and prose that cites them goes stale without anyone noticing. ctest runs this
("docs: links and repository paths exist") so a change that forgets the docs fails the build's
tests instead of misleading a reader later (issue 37).

Usage: check_docs.py REPO_ROOT. Checks, in README.md and every docs/*.md:
  * relative markdown links, [text](path), [text](path#anchor), ![alt](path) and reference
    definitions "[label]: path", resolved against the markdown file's folder; http(s):,
    mailto: and other schemes are not checked. An #anchor, in a link to a .md file or alone
    (this file), must be a heading of that file, as GitHub makes its id: lower case, markup and
    punctuation other than '-' and '_' dropped, spaces as '-', a repeated heading's id
    suffixed -1, -2, ...;
  * repository paths in `inline code` and in fenced code blocks: whitespace-separated tokens
    that start with one of the root's real top-level entries and a slash (bench/..., docs/...),
    resolved against REPO_ROOT. Tokens with glob or placeholder characters (* ? { < [ $ ...)
    are skipped, trailing punctuation and :LINE suffixes are stripped, and build outputs
    (build/, build-gpu/, results/, bench-out/, third_party/) are not checked. A line holding
    <!-- not-a-path --> is exempt from the path check (for paths the user creates, or a
    removed file cited as history); its links are still checked;
  * versions the docs state as current (the database schema, the plugin SDK, the result
    document) equal the code's constants (FACTS below); each statement must still be found;
  * README's throughput figures come from docs/benchmarks.md: in every README paragraph, list
    item or table that says "img/s", each number of 100 or more that is not a ratio, a
    percentage or a size must appear in docs/benchmarks.md (to its rounding: 5,029 matches
    5,029.4), within the sections the paragraph links to (docs/benchmarks.md#anchor) when it
    links to any, else anywhere in the file.
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
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")

# (what, a docs pattern whose group 1 states it, the code file, a pattern whose group 1 holds it)
FACTS = [
    ("the database schema version", r"`kSchemaVersion` \((\d+)|^\* \**Schema version (\d+)",
     "storage/store.h", r"constexpr int kSchemaVersion = (\d+);"),
    ("the plugin SDK version", r"provides SDK version (\d+)|`ORCH_SDK_VERSION` in `orch/plugin\.h` "
     r"\(now (\d+)\)", "orchestrator/include/orch/plugin.h", r"#define ORCH_SDK_VERSION (\d+)"),
    ("the result document's version", r"\(JSON, version (\d+)\)|result document: JSON, version "
     r"(\d+)", "orchestrator/src/result/result_document.h",
     r"constexpr std::int64_t kResultVersion = (\d+);"),
]

BENCHMARKS = "docs/benchmarks.md"
# A figure: 5,029 or 5029 or 5,029.8, not part of a word, a version (580.159.04) or a range.
NUMBER = re.compile(r"(?<![\w.,/-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w/]|[.,]\d)")
# What follows a number that is no throughput: a ratio, a share, a size, a resolution (224x224).
NOT_THROUGHPUT = re.compile(r"\s?(?:x\b|x\d|%|GiB|GB|MB|KB|W\b|ms\b)")


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


def slug(heading):
    """GitHub's id for a heading's text: its rendered text, lower case, only letters, digits,
    '-', '_' and spaces kept, spaces turned into '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    return "".join(c for c in text.lower() if c.isalnum() or c in " -_").replace(" ", "-")


def markdown_lines(text):
    """(line number, line, inside a fenced block) for each line; fence lines count as inside."""
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            yield number, line, True
        else:
            yield number, line, in_fence


def headings(text):
    """[(level, id, line number)] of a markdown text's headings, ids made unique as GitHub does."""
    seen, out = {}, []
    for number, line, fenced in markdown_lines(text):
        m = None if fenced else HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.append((len(m.group(1)), base if count == 0 else f"{base}-{count}", number))
    return out


class Repo:
    """The repository's files, read once each."""

    def __init__(self, root):
        self.root = root
        self.entries = set(os.listdir(root)) - {".git"}
        self.texts = {}

    def text(self, rel):
        if rel not in self.texts:
            with open(os.path.join(self.root, rel), encoding="utf-8") as f:
                self.texts[rel] = f.read()
        return self.texts[rel]

    def anchors(self, rel):
        return {anchor for _, anchor, _ in headings(self.text(rel))}


def check_link(repo, rel, where, target, problems):
    path, _, anchor = target.partition("#")
    path = path.split("?", 1)[0]
    target_rel = rel if not path else os.path.normpath(
        os.path.join(os.path.dirname(rel), path))
    if path and not os.path.exists(os.path.join(repo.root, target_rel)):
        problems.append(f"{where}: link to a missing file: {target}")
    elif anchor and target_rel.endswith(".md") and anchor not in repo.anchors(target_rel):
        problems.append(f"{where}: link to a missing heading: {target} "
                        f"(no heading of {target_rel} has the id '{anchor}')")


def check_file(repo, rel, problems, counts):
    text = repo.text(rel)
    lines = text.splitlines()
    for number, line, in_fence in markdown_lines(text):
        where = f"{rel}:{number}"
        if FENCE.match(line):
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
            if not EXTERNAL.match(target):
                counts["links"] += 1
                check_link(repo, rel, where, target, problems)
        if OPT_OUT in line:
            continue
        for span in code:
            for token in span.split():
                path = path_token(token, repo.entries)
                if path is None:
                    continue
                counts["paths"] += 1
                if not os.path.exists(os.path.join(repo.root, path)):
                    problems.append(f"{where}: no such file or folder in the repository: {path}")
    if sum(1 for line in lines if FENCE.match(line)) % 2:
        problems.append(f"{rel}:{len(lines)}: a code block is never closed")


def check_facts(repo, files, problems, counts):
    for what, docs_pattern, code_file, code_pattern in FACTS:
        code = re.search(code_pattern, repo.text(code_file))
        if not code:
            problems.append(f"{code_file}: {what} is not where check_docs.py looks for it")
            continue
        stated = 0
        for rel in files:
            for number, line, fenced in markdown_lines(repo.text(rel)):
                for m in re.finditer(docs_pattern, line):
                    stated += 1
                    value = next(g for g in m.groups() if g is not None)
                    if value != code.group(1):
                        problems.append(f"{rel}:{number}: {what} is {code.group(1)} "
                                        f"({code_file}), not {value}")
        counts["facts"] += stated
        if stated == 0:
            problems.append(f"check_docs.py: no file states {what} any more; update FACTS")


def blocks(text):
    """[(first line number, text)] of a markdown text's paragraphs, list items and tables,
    outside fenced code and headings."""
    out, current, start, kind = [], [], 0, None
    for number, line, fenced in markdown_lines(text):
        stripped = line.strip()
        this = ("table" if stripped.startswith("|") else
                "item" if re.match(r"^\s*(?:[*+-]|\d+\.)\s", line) else "text")
        new_block = (fenced or not stripped or HEADING.match(line) or this == "item"
                     or (kind == "table") != (this == "table"))
        if new_block and current:
            out.append((start, "\n".join(current)))
            current = []
        if fenced or not stripped or HEADING.match(line):
            kind = None
            continue
        if not current:
            start, kind = number, this
        current.append(line)
    if current:
        out.append((start, "\n".join(current)))
    return out


def figures(text):
    """[(value, decimals, as written)] of the numbers of 100 or more that may be throughputs."""
    text = LINK.sub(lambda m: m.group(0).split("](")[0], text)  # link targets hold no figures
    text = CODE_SPAN.sub(" ", text)
    out = []
    for m in NUMBER.finditer(text):
        written = m.group(0)
        value = float(written.replace(",", ""))
        if value < 100 or NOT_THROUGHPUT.match(text, m.end()):
            continue
        out.append((value, len(m.group(2) or ".") - 1, written))
    return out


def section(repo, rel, anchor):
    """The text of the heading with this id, down to the next heading of its level or above."""
    lines = repo.text(rel).splitlines()
    marks = headings(repo.text(rel))
    for i, (level, ident, number) in enumerate(marks):
        if ident == anchor:
            end = next((n for lv, _, n in marks[i + 1:] if lv <= level), len(lines) + 1)
            return "\n".join(lines[number - 1:end - 1])
    return None  # a missing anchor is reported by the link check


def check_readme_figures(repo, problems, counts):
    for number, block in blocks(repo.text("README.md")):
        if "img/s" not in block:
            continue
        anchors = [t.partition("#")[2] for t in (m.group(1) for m in LINK.finditer(block))
                   if t.partition("#")[0] == BENCHMARKS and "#" in t]
        sources = [s for s in (section(repo, BENCHMARKS, a) for a in anchors) if s is not None]
        source = "\n".join(sources) if sources else repo.text(BENCHMARKS)
        known = [v for v, _, _ in figures(source)] + [
            float(m.group(0).replace(",", "")) for m in NUMBER.finditer(source)]
        where = (f"the section(s) #{', #'.join(anchors)} of {BENCHMARKS}" if sources
                 else BENCHMARKS)
        for value, decimals, written in figures(block):
            counts["figures"] += 1
            if not any(abs(k - value) <= 0.5 * 10 ** -decimals + 1e-9 for k in known):
                problems.append(f"README.md:{number}: {written} (in a paragraph that says img/s) "
                                f"is not in {where}")


def main(argv):
    if len(argv) != 2:
        print("usage: check_docs.py REPO_ROOT", file=sys.stderr)
        return 2
    repo = Repo(os.path.abspath(argv[1]))
    docs = os.path.join(repo.root, "docs")
    files = ["README.md"] + sorted(
        os.path.join("docs", n) for n in os.listdir(docs) if n.endswith(".md"))
    problems, counts = [], {"links": 0, "paths": 0, "facts": 0, "figures": 0}
    for rel in files:
        check_file(repo, rel, problems, counts)
    check_facts(repo, files, problems, counts)
    check_readme_figures(repo, problems, counts)
    for problem in problems:
        print(problem)
    print(f"docs: {len(files)} files, {counts['links']} links, {counts['paths']} paths, "
          f"{counts['facts']} stated versions, {counts['figures']} README figures checked, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
