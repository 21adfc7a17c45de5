"""Chromium and its driver for the report's browser test (``tests/harness/test_html_report.py``).

Debian's ``chromium`` and ``chromium-driver`` from the package registry (a browser download by
Playwright or Selenium's manager fails here). Idempotent: nothing to do when both are installed;
installs them when apt-get can (root); otherwise says how, and the test skips naming the command.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
INSTALL = "apt-get install -y --no-install-recommends chromium chromium-driver"


def installed() -> bool:
    return os.path.exists(CHROMIUM) and os.path.exists(DRIVER)


def main() -> int:
    if installed():
        print("browser setup: chromium and chromium-driver already installed; nothing to do")
        return 0
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        print(f"browser setup: cannot install here (needs apt-get as root): run `{INSTALL}`")
        return 0
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(INSTALL.split(), env=env).returncode != 0:  # a stale package index: refresh once
        subprocess.run(["apt-get", "update", "-q"], env=env)
        subprocess.run(INSTALL.split(), env=env)
    print(f"browser setup: {'installed' if installed() else 'FAILED to install'} chromium and chromium-driver")
    return 0


if __name__ == "__main__":
    sys.exit(main())
