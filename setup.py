"""Build script for the optional C extension ``uet.native._uet_native``.

All metadata lives in pyproject.toml; this file only adds the cffi module.
The C build is optional: if it fails (no compiler, no headers, ...), the
package installs anyway and ``uet.native`` runs on its pure-Python twin
(``uet.native.BACKEND == "python"``), warning once at import.
"""

import glob
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.egg_info import egg_info

HERE = os.path.dirname(os.path.abspath(__file__))
BUILDER = "native/build_native.py"


class OptionalBuildExt(build_ext):
    """build_ext that reports a failed C build and carries on."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # CompileError, DistutilsPlatformError, ...
            self._report(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._report(exc, ext.name)

    def _report(self, exc, name="the C extension"):
        sys.stderr.write(
            "WARNING: building %s failed (%s: %s); uet.native will use its "
            "pure-Python twin\n" % (name, type(exc).__name__, exc)
        )


class EggInfoWithNative(egg_info):
    """Adds native/ (cffi builder, C sources, test driver) and the uet.native
    type stubs to the source file list, so that an sdist (and a wheel built
    from it, as ``python -m build`` does) still has what the C build needs."""

    EXTRA = ["native/*.c", "native/*.h", "native/*.cdef", "native/*.py", "uet/native/*.pyi", "uet/native/py.typed"]

    def find_sources(self):
        super().find_sources()
        for pattern in self.EXTRA:
            for path in sorted(glob.glob(os.path.join(HERE, pattern))):
                rel = os.path.relpath(path, HERE).replace(os.sep, "/")
                if rel not in self.filelist.files:
                    self.filelist.append(rel)


kwargs = {"cmdclass": {"build_ext": OptionalBuildExt, "egg_info": EggInfoWithNative}}
try:
    import cffi  # noqa: F401  (a build requirement; absent only in odd setups)
except ImportError:
    sys.stderr.write("WARNING: cffi is not available; skipping the C extension\n")
else:
    if os.path.exists(os.path.join(HERE, BUILDER)):
        kwargs["cffi_modules"] = [BUILDER + ":ffibuilder"]
    else:
        sys.stderr.write("WARNING: %s is missing; skipping the C extension\n" % BUILDER)

setup(**kwargs)
