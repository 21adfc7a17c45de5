"""Each GPU requirements file resolves on PyPI, and its torch and onnxruntime agree on CUDA.

pip resolves the file for a Linux x86_64 CPython 3.11 machine (``--dry-run --report``, with
``--use-feature=fast-deps``: PyPI's torch and nvidia-* files carry no separate metadata here, so a plain
dry run downloads every wheel, GBs; lazily it reads their metadata by HTTP range requests, ~30 s a file,
one request after another).
The CUDA each side is built for comes from two places: the wheel's own build record
(``torch/version.py`` ``cuda``, ``onnxruntime/capi/build_and_package_info.py`` ``cuda_version``, read
by range requests too) and the CUDA libraries it pulls in (``nvidia-*-cuNN``, ``cuda-toolkit``...).

Needs the registry (CI has it). Only PyPI is asked: the machine's own pip configuration (local wheel
folders, extra indexes, constraints) is left out; ``ORTCHECK_PYPI_INDEX_URL`` or ``PIP_INDEX_URL`` name
a mirror of it.
"""
from __future__ import annotations

import concurrent.futures
import io
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REQUIREMENTS = Path(__file__).resolve().parents[2] / "requirements"
PYTHON = "3.11"
# pip takes a --platform literally: a manylinux_2_28 machine also installs every older manylinux tag
PLATFORMS = ([f"manylinux_2_{minor}_x86_64" for minor in range(28, 4, -1)]
             + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"])
MARKERS = {**default_environment(), "python_version": PYTHON, "python_full_version": f"{PYTHON}.0",
           "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
# Where the wheel records the CUDA it was built for.
BUILD_RECORD = {"torch": ("torch/version.py", r"^cuda\b.*=\s*'([\d.]+)'"),
                "onnxruntime-gpu": ("onnxruntime/capi/build_and_package_info.py", r"^cuda_version\s*=\s*'([\d.]+)'"),
                "onnxruntime-training": ("onnxruntime/capi/build_and_package_info.py", r"^cuda_version\s*=\s*'([\d.]+)'")}
# Packages without a -cuNN suffix whose version's major is the CUDA major (cuFFT, cuRAND... have their own).
CUDA_VERSIONED = {"cuda-toolkit", "cuda-bindings", "nvidia-cuda-runtime", "nvidia-cuda-nvrtc", "nvidia-cuda-cupti",
                  "nvidia-cublas", "nvidia-nvjitlink", "nvidia-nvtx"}
# The one file where torch and onnxruntime may differ, and exactly how (requirements/ort119-gpu.txt: no CUDA 12
# build of onnxruntime-training is on PyPI; its CUDA 11 libraries come from the nvidia-*-cu11 wheels it pins).
KNOWN_SPLIT = {"ort119-gpu.txt": {"torch": 12, "onnxruntime-training": 11}}
FILES = ["gpu.txt", "ort119-gpu.txt"]
# pip's words for a request that failed on the network, not on the requirements
NETWORK_ERROR = r"ConnectionError|Read timed out|Max retries exceeded|Connection reset|Temporary failure in name resolution"


def cuda_major(name: str, version: str) -> int | None:
    """The CUDA major a resolved package belongs to, where its name or version says it."""
    suffix = re.search(r"-cu(\d+)$", name)
    if suffix:
        return int(suffix[1][:2])  # cu11, cu12, cu13; the old cu117 style too
    return int(version.split(".")[0]) if name in CUDA_VERSIONED else None


def test_cuda_major_reads_names_and_versions():
    assert cuda_major("nvidia-cudnn-cu13", "9.20.0.48") == 13 and cuda_major("nvidia-cublas-cu117", "11.10") == 11
    assert cuda_major("cuda-toolkit", "13.0.3.0") == 13 and cuda_major("nvidia-cuda-runtime", "12.8.90") == 12
    assert cuda_major("nvidia-cufft", "12.0.0.61") is None and cuda_major("numpy", "2.4.6") is None


# pip's lazy wheel reads a wheel's end 10 KB per request until it holds the zip's whole central directory:
# torch's is ~5.5 MB, 558 round trips one after another (gpu.txt: 1,206 requests, 85 s). 1 MB requests read
# it in 6 and change no byte pip sees, nor its resolution (gpu.txt: 231 requests, 29 s). Where a pip release
# no longer has that default, pip runs as it is: slower, the same verdict.
PIP_WITH_WIDER_RANGES = """
import sys
try:
    from pip._internal.network.lazy_wheel import LazyZipOverHTTP
    if LazyZipOverHTTP.__init__.__defaults__ == (10 * 1024,):
        LazyZipOverHTTP.__init__.__defaults__ = (1 << 20,)
except ImportError:
    pass
from pip._internal.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _pip_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("PIP_") or key in ("PIP_CERT", "PIP_CLIENT_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_PROXY")}
    env["PIP_CONFIG_FILE"] = os.devnull  # pip then reads no configuration file at all
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def resolve(file: str, tmp_path: Path) -> dict:
    report = tmp_path / "report.json"
    index = os.environ.get("ORTCHECK_PYPI_INDEX_URL") or os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    cmd = [sys.executable, "-c", PIP_WITH_WIDER_RANGES, "install", "--dry-run", "--ignore-installed", "--quiet", "--no-cache-dir",
           "--use-feature=fast-deps", "--index-url", index, "--report", str(report), "--only-binary=:all:",
           "--python-version", PYTHON, "--implementation", "cp", "--target", str(tmp_path / "target"),
           *(arg for platform in PLATFORMS for arg in ("--platform", platform)), "-r", str(REQUIREMENTS / file)]
    for _ in range(3):  # pip retries each request; a resolution that still lost the network is tried again
        proc = subprocess.run(cmd, capture_output=True, text=True, env=_pip_env(), timeout=300)
        if proc.returncode == 0 or not re.search(NETWORK_ERROR, proc.stderr):
            break
    assert proc.returncode == 0, f"requirements/{file} does not resolve on {index}:\n{proc.stderr[-3000:]}"
    return json.loads(report.read_text())


def _fetch(request: urllib.request.Request, attempts: int = 4) -> tuple[dict, bytes]:
    """(headers, body) of ``request``, retried with backoff on a dropped connection, a timeout or a 5xx:
    a network hiccup on one of the dozens of range requests says nothing about the requirements."""
    def get():
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.headers, response.read()

    for attempt in range(attempts - 1):
        try:
            return get()
        except urllib.error.HTTPError as error:
            if error.code < 500:
                raise
        except (urllib.error.URLError, TimeoutError, ConnectionError):
            pass
        time.sleep(2 ** attempt)
    return get()


class _HttpRange(io.RawIOBase):
    """A remote file read by HTTP range requests: zipfile needs the central directory and one member."""

    def __init__(self, url: str):
        self.url, self.pos = url, 0
        headers, _ = _fetch(urllib.request.Request(url, method="HEAD"))
        self.size = int(headers["Content-Length"])

    def readable(self): return True
    def seekable(self): return True
    def tell(self): return self.pos

    def seek(self, offset, whence=io.SEEK_SET):
        self.pos = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence] + offset
        return self.pos

    def readinto(self, buffer):
        end = min(self.size, self.pos + len(buffer))
        if end <= self.pos:
            return 0
        request = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end - 1}"})
        _, data = _fetch(request)
        buffer[:len(data)] = data
        self.pos += len(data)
        return len(data)


def built_for(item: dict) -> tuple[str, str]:
    """(CUDA version, where it was read) from the resolved wheel's own build record."""
    member, pattern = BUILD_RECORD[canonicalize_name(item["metadata"]["name"])]
    url = item["download_info"]["url"]
    with zipfile.ZipFile(io.BufferedReader(_HttpRange(url), buffer_size=1 << 16)) as wheel:
        text = wheel.read(member).decode()
    match = re.search(pattern, text, re.M)
    assert match, f"{url.rsplit('/', 1)[-1]}: no CUDA version in {member}:\n{text}"
    return match[1], f"{url.rsplit('/', 1)[-1]}:{member}"


def cuda_deps(report: dict, root: str) -> dict[str, int]:
    """The resolved CUDA packages `root` pulls in (through extras and markers), each with its CUDA major."""
    items = {canonicalize_name(item["metadata"]["name"]): item for item in report["install"]}
    seen, todo, found = set(), [(root, tuple(items[root].get("requested_extras") or ()))], {}
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen or name not in items:
            continue
        seen.add((name, extras))
        for line in items[name]["metadata"].get("requires_dist") or ():
            req = Requirement(line)
            if req.marker and not any(req.marker.evaluate({**MARKERS, "extra": extra}) for extra in extras or ("",)):
                continue
            dep = canonicalize_name(req.name)
            if dep in items:
                major = cuda_major(dep, items[dep]["metadata"]["version"])
                if major is not None:
                    found[f"{dep}=={items[dep]['metadata']['version']}"] = major
                todo.append((dep, tuple(sorted(req.extras))))
    return found


def test_the_gpu_requirements_resolve_to_one_cuda_per_package(tmp_path):
    """Both files at once: each is ~30 s waiting on PyPI (pip's range requests, one after
    another), not computing; each failure names its file."""
    with concurrent.futures.ThreadPoolExecutor(len(FILES)) as pool:
        checked = {file: pool.submit(check_file, file, tmp_path / Path(file).stem) for file in FILES}
    failures = {file: error for file, future in checked.items() if (error := future.exception())}
    assert not failures, "\n\n".join(f"requirements/{file}: {type(error).__name__}: {error}"
                                       for file, error in failures.items())


def check_file(file: str, tmp_path: Path) -> None:
    tmp_path.mkdir()
    report = resolve(file, tmp_path)
    names = {canonicalize_name(item["metadata"]["name"]) for item in report["install"]}
    roots = ["torch"] + sorted(names & {"onnxruntime-gpu", "onnxruntime-training"})
    assert len(roots) == 2, f"requirements/{file}: resolves {sorted(names)}, not torch and one onnxruntime CUDA build"
    items = {canonicalize_name(item["metadata"]["name"]): item for item in report["install"]}
    built = {}
    for root in roots:
        version, where = built_for(items[root])
        built[root] = int(version.split(".")[0])
        deps = cuda_deps(report, root)
        others = {dep: major for dep, major in deps.items() if major != built[root]}
        assert not others, f"requirements/{file}: {root} is built for CUDA {version} ({where}) but pulls in {others}"
        if root == "torch":
            assert deps, f"requirements/{file}: torch {items[root]['metadata']['version']} pulls in no CUDA library"
    expected = KNOWN_SPLIT.get(file)
    if expected is None:
        assert built[roots[0]] == built[roots[1]], f"requirements/{file}: CUDA majors differ: {built}"
    else:
        assert built == expected, f"requirements/{file}: CUDA majors {built}, documented as {expected}"
        # onnxruntime's CUDA libraries are in the resolution at its own major (the file pins them)
        majors = {canonicalize_name(item["metadata"]["name"]): cuda_major(canonicalize_name(item["metadata"]["name"]),
                                                                        item["metadata"]["version"])
                  for item in report["install"]}
        for lib in ("nvidia-cuda-runtime", "nvidia-cublas", "nvidia-cudnn", "nvidia-cufft"):
            assert majors.get(f"{lib}-cu{expected[roots[1]]}") == expected[roots[1]], \
                f"requirements/{file}: {roots[1]}'s CUDA {expected[roots[1]]} library {lib} is not resolved"
