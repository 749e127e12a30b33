"""Build of the C extension cuzk.backends.native._native (everything else is in pyproject.toml).

Plain C11 with ``unsigned __int128`` and pthreads; no numpy headers. Every
header is listed in ``depends`` so that ``pip install -e .`` recompiles when
any C file changes.
"""

from pathlib import Path

from setuptools import Extension, setup

NATIVE = Path("src/cuzk/backends/native")

setup(
    ext_modules=[
        Extension(
            "cuzk.backends.native._native",
            sources=sorted(str(p) for p in NATIVE.glob("*.c")),
            depends=sorted(str(p) for p in NATIVE.glob("*.h")),
            extra_compile_args=["-O3", "-std=gnu11", "-Wall", "-Wextra", "-pthread"],
            extra_link_args=["-pthread"],
        )
    ]
)
