#!/bin/sh
# tools/deps.sh HAVE_LUA HAVE_BLAS HAVE_MPI "PACKAGES" [HAVE_GLPK] — the Makefile's deps
# step: the Debian packages the build and the tests need, installed when we
# are root and apt-get works, named otherwise. Only Lua and BLAS are needed
# to build: when they are there, a failed install (no package registry) is a
# note and the build goes on; without them it is an error that says how to
# install them or to build elsewhere. `make NODEPS=1` does not call this.
# The Makefile decides HAVE_* with pkg-config (yes or no).
have_lua=$1 have_blas=$2 have_mpi=$3 pkgs=$4 have_glpk=${5:-yes}
missing=""
[ "$have_glpk" = yes ] || missing="$missing glpk"
[ "$have_lua" = yes ] || missing="$missing lua5.4"
[ "$have_blas" = yes ] || missing="$missing openblas"
{ [ "$have_mpi" = yes ] && command -v mpirun >/dev/null; } || missing="$missing openmpi"
for t in python3 xmllint rsvg-convert lua5.4; do command -v $t >/dev/null || missing="$missing $t"; done
[ -n "$missing" ] || exit 0
installed=no
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing $pkgs (missing:$missing)"
  # shellcheck disable=SC2086
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkgs >/dev/null \
    && installed=yes || echo "note: could not install $pkgs (no package registry?)"
fi
[ $installed = yes ] && exit 0
if [ "$have_lua" = no ] || [ "$have_blas" = no ]; then
  echo "error: missing:$missing: install them with 'apt-get install $pkgs' (as root), or build elsewhere with 'make gpu-bundle' and carry build-gpu/"
  exit 1
fi
echo "note: missing:$missing ('run' uses threads only without OpenMPI; 'sim --optimal' needs GLPK; the tests need python3, xmllint, rsvg-convert, lua5.4)"
