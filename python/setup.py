"""setup.py — the stagecraft wheel carries its own library and binary (docs/interchange.md#python).

`pip install ./python` (or `python -m build python`) builds the C core with
the repository's Makefile into build/python/ (its own folder: the flags of
a wheel, CPU only, never those of a developer's build/) and puts
libstagecraft.so into the package as stagecraft/_bin/libstagecraft.so,
which the package calls in process through ctypes (stagecraft._lib: no
compiler at install beyond this build), and the executable beside it as
stagecraft/_bin/stagecraft, where stagecraft.binary() finds it (for
Comparison._repr_svg_ and the command line): no environment variable,
nothing on PATH.

The version has one source, SC_VERSION in lang/core/core.h (the binary's
`sc.version`): read here for the wheel's metadata and written into
stagecraft/_version.py.

The sources are the repository around this folder; an sdist carries a copy
of what the build needs under _core/ (python -m build makes the wheel from
the sdist, which holds no parent folder).
"""
import fcntl
import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.dist import Distribution
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
# What `make` needs to build the executable (the sdist's _core/ copy).
CORE = ["Makefile", "interp", "lang", "runtime", "stdlib", "tools", "include"]


def root():
    """The source tree: the repository around python/, or the sdist's copy."""
    for r in (os.path.dirname(HERE), os.path.join(HERE, "_core")):
        if os.path.isfile(os.path.join(r, "lang", "core", "core.h")) and \
                os.path.isfile(os.path.join(r, "Makefile")):
            return r
    raise RuntimeError("stagecraft: no C sources found beside python/ (nor an sdist's _core/)")


def version():
    text = open(os.path.join(root(), "lang", "core", "core.h")).read()
    return re.search(r'^#define SC_VERSION "([^"]+)"', text, re.M).group(1)


def make_env():
    """The environment of make: a make that runs pip (a test under `make
    asan`) passes its variables in MAKEFLAGS; the wheel's build takes
    none of them."""
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "BUILD", "SAN", "OPT"):
        env.pop(k, None)
    return env


class BuildWithBinary(build_py):
    def run(self):
        super().run()
        src = root()
        build = os.path.join(src, "build", "python")
        # CPU only (NVCC=): the CUDA module stays a `make` of the repository.
        # mpi-module: the MPI transport's module (nothing without MPI), which
        # `run` under mpirun loads from beside the binary.
        cmd = ["make", "-C", src, "BUILD=" + build, "NVCC=", os.path.join(build, "stagecraft"),
               os.path.join(build, "libstagecraft.so"), "mpi-module"]
        jobs = os.cpu_count() or 1
        # One make at a time in build/python: two pip installs at once (the
        # test suites run concurrently) would otherwise write the same objects.
        os.makedirs(build, exist_ok=True)
        with open(os.path.join(build, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            subprocess.run(cmd + ["-j%d" % min(jobs, 8)], check=True, env=make_env())
        pkg = os.path.join(self.build_lib, "stagecraft")
        os.makedirs(os.path.join(pkg, "_bin"), exist_ok=True)
        shutil.copy2(os.path.join(build, "stagecraft"), os.path.join(pkg, "_bin", "stagecraft"))
        shutil.copy2(os.path.join(build, "libstagecraft.so"),
                     os.path.join(pkg, "_bin", "libstagecraft.so"))
        if os.path.exists(os.path.join(build, "libstagecraft_mpi.so")):
            shutil.copy2(os.path.join(build, "libstagecraft_mpi.so"),
                         os.path.join(pkg, "_bin", "libstagecraft_mpi.so"))
        with open(os.path.join(pkg, "_version.py"), "w") as f:
            f.write('"""Written by setup.py from SC_VERSION (lang/core/core.h)."""\n')
            f.write("__version__ = %r\n" % version())


class SdistWithCore(sdist):
    """The sdist carries the C sources under _core/ (the wheel is built
    from it, away from the repository)."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        src = root()
        os.makedirs(os.path.join(base_dir, "_core"), exist_ok=True)
        for name in CORE:
            path = os.path.join(src, name)
            dest = os.path.join(base_dir, "_core", name)
            if os.path.isdir(path):
                shutil.copytree(path, dest, ignore=shutil.ignore_patterns("*.o", "*.d", "build*"))
            else:
                shutil.copy2(path, dest)


class BinaryDistribution(Distribution):
    """A wheel for this platform (it holds a library and an executable), not py3-none-any."""

    def has_ext_modules(self):
        return True


setup(
    version=version(),
    cmdclass={"build_py": BuildWithBinary, "sdist": SdistWithCore},
    distclass=BinaryDistribution,
)
