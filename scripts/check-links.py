#!/usr/bin/env python3
"""Checks that every relative link and repository path named in the docs exists.

The docs name files all the time (`src/dq/worker.cpp`, [bench/README.md](bench/README.md)),
and files move: a name that no longer exists sends a reader nowhere. This checks README.md,
CONTRIBUTING.md and every docs/**/*.md:

  - markdown links [text](target) whose target is not a URL or a bare #anchor: the target,
    without its #fragment, relative to the file that links;
  - repository paths, in `backticks` or in fenced code blocks (the README's map of the
    tree, commands such as `bash scripts/test.sh`): a token that starts with a top-level
    directory of the repository (src/, include/, docs/, ...) and ends in a file extension
    or "/" (a directory), relative to the repository's root. A ":line" suffix is dropped.
    A bare upper-case Markdown name (`README.md`, `CHANGELOG.md`) is a file at the root.
    Tokens with wildcards or placeholders (*, <name>, {a,b}) are skipped, and so is
    anything under another root (build/, boost/, node_modules/, ...): such a path is not
    the repository's.

Usage: scripts/check-links.py [repository root]   (exit status 1 when a name is missing)
Run by ctest as docs_links, and by scripts/test.sh.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
ROOT = ROOT.resolve()

# The top-level directories of the repository: a path that starts with one is ours.
# (build trees are not: build/, build-release/, build-asan/... are made by the scripts)
TOP_DIRS = {
    p.name
    for p in ROOT.iterdir()
    if p.is_dir() and not p.name.startswith(".") and not p.name.startswith("build")
}

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
BACKTICKS = re.compile(r"`([^`\n]+)`")
# A path token: path characters only, at least one "/", a file extension or a final "/".
PATH = re.compile(r"^(?:\./)?([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.+-]+)*(?:\.[A-Za-z0-9]+|/))$")
TOKEN_SPLIT = re.compile(r"[\s,;()\[\]`'\"]+")


def candidate(token):
    """The repository path a token names, or None when it names none."""
    token = re.sub(r":\d+(?:-\d+)?$", "", token.rstrip(".:"))
    m = PATH.match(token)
    if not m:
        return None
    path = m.group(1)
    first, _, rest = path.partition("/")
    if not rest and not path.endswith("/"):
        return path if re.match(r"^[A-Z][A-Z0-9_-]*\.md$", path) else None
    if first not in TOP_DIRS:
        return None
    return path


def check(md, problems):
    text = md.read_text(encoding="utf-8")
    rel = md.relative_to(ROOT)
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            tokens = TOKEN_SPLIT.split(line)
        else:
            tokens = []
            for span in BACKTICKS.findall(line):
                tokens.extend(TOKEN_SPLIT.split(span))
            for m in LINK.finditer(line):
                target = m.group(1) or m.group(2)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                path = target.split("#", 1)[0]
                if path and not (md.parent / path).exists():
                    problems.append(f"{rel}:{number}: link to {target}: no such file")
        for token in tokens:
            path = candidate(token)
            if path and not (ROOT / path).exists():
                problems.append(f"{rel}:{number}: {path}: no such file or directory")


def main():
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    problems = []
    for md in files:
        if md.exists():
            check(md, problems)
    for p in problems:
        print(p)
    if problems:
        print(f"check-links: {len(problems)} missing name(s) in the docs")
        return 1
    print(f"check-links: {len(files)} files, every linked or named path exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
