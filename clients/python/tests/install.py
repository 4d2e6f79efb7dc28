"""Checks that `pip install ./clients/python` gives a usable, typed package: installs a copy
of this folder (pip's in-tree build would leave build/ behind) into a temporary target with
Debian's pip and setuptools, offline (--no-build-isolation --no-deps: no PyPI is reached),
then imports it from there in a fresh interpreter and finds its py.typed marker. Why a test:
a module left out of pyproject.toml passes every other test, which import src/ directly.
Exits 77 (ctest's skip) when pip or setuptools are missing.
"""

import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHECK = """
import importlib.resources, timewheel_client
assert timewheel_client.__file__.startswith(TARGET), timewheel_client.__file__
assert importlib.resources.files("timewheel_client").joinpath("py.typed").is_file(), "no py.typed"
for name in timewheel_client.__all__:
    getattr(timewheel_client, name)
print("installed:", sorted(timewheel_client.__all__))
"""


def main() -> int:
    for module in ("pip", "setuptools"):
        if subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode:
            print(f"SKIP: {sys.executable} has no {module} (Debian: python3-pip, python3-setuptools)")
            return 77
    with tempfile.TemporaryDirectory(prefix="pyclient-install-") as tmp:
        source = os.path.join(tmp, "source")
        shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        target = os.path.join(tmp, "site")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--root-user-action=ignore",
                        "--no-build-isolation", "--no-deps", "--no-index", "--target", target, source],
                       check=True)
        env = dict(os.environ, PYTHONPATH=target)
        subprocess.run([sys.executable, "-c", f"TARGET = {target!r}\n" + CHECK], check=True, env=env, cwd=tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
