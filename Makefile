# stagecraft — build, test, sanitize.
#   make            build ./stagecraft (installs missing Debian packages as root)
#   make check      the fast tier, for every edit: unit, Lua, command line, docs, and
#                   a sample of every end-to-end suite but real PyTorch (at most 90
#                   CPU-s, about a minute on 2 cores); a line per suite, the 5 slowest
#   make test       every suite whole: C unit tests, Lua tests of the DSL, command-line
#                   tests, the runtime, the Python package and real PyTorch (installed
#                   once into ~/.cache/stagecraft/torch)
#   make asan       the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz       libFuzzer harnesses tests/fuzz/fuzz_*.c, FUZZ_TIME s each (clang)
#   make bench      benchmarks (print figures; not pass/fail)
#   make gpu-test   the CUDA backend on a GPU (tests/gpu/run.sh; skips without one)
#   make gpu-bench  GPU benchmarks (bench/gpu/run.sh)
#   make gpu-bundle a self-contained build-gpu/ to carry to a GPU machine
#   make gpu-check  on the GPU machine: environment, GPU tests, sanitizers,
#                   benchmarks, into one log (tools/gpu_check.sh)
#   make echo       what the build decided
#   make install    PREFIX=DIR (default /usr/local; DESTDIR too): the binary, libstagecraft
#                   (.so, .a), include/stagecraft.h, stagecraft.pc, the Lua module and the
#                   stdlib recipes; make uninstall removes them (docs/embed.md)
# With nvcc (on PATH or /usr/local/cuda/bin) the CUDA backend and the CUDA
# transports are built in; `make NVCC=` builds for the CPU only.
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wformat=2 -Wno-format-nonliteral -Werror=implicit-function-declaration
# WERROR=1 (CI) turns every warning into an error.
WARN    += $(if $(WERROR),-Werror)
# -fPIC: the same objects make the binary, libstagecraft.so and the Lua
# module; -fno-semantic-interposition keeps calls inside a file direct.
CFLAGS  += -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) $(WARN) -fPIC -fno-semantic-interposition \
           -Iinterp -Ilang -Iruntime -Iinclude
# Each object's (and each one-source program's) headers into a .d file
# beside it, included at the end: editing a header rebuilds exactly what uses it.
DEPFLAGS := -MMD -MP
SAN     :=
LDLIBS  += -lm

# Lua 5.4 and readline come from Debian (liblua5.4-dev, libreadline-dev); the
# tests drive the REPL and check exports with python3, xmllint, rsvg-convert,
# and load the Lua module into stock lua5.4 (tests/embed.sh);
# the CPU runtime uses OpenBLAS (CBLAS) and OpenMPI.
DEB_PKGS := liblua5.4-dev libreadline-dev pkg-config python3 libxml2-utils librsvg2-bin \
             libopenblas-dev libopenmpi-dev openmpi-bin libglpk-dev lua5.4
# Recursive (=): evaluated when used, i.e. after `deps` has installed them.
LUA_CFLAGS = $(shell pkg-config --cflags lua5.4 2>/dev/null)
LUA_LIBS   = $(shell pkg-config --libs lua5.4 2>/dev/null)
HAVE_LUA   = $(if $(LUA_LIBS),yes,no)
# GNU readline for the REPL when its header is there (else a plain line reader).
HAVE_READLINE = $(shell printf '\043include <stdio.h>\n\043include <readline/readline.h>\n' | \
                  $(CC) -E - >/dev/null 2>&1 && echo yes || echo no)
RL_CFLAGS  = $(if $(filter yes,$(HAVE_READLINE)),-DSC_HAVE_READLINE)
RL_LIBS    = $(if $(filter yes,$(HAVE_READLINE)),-lreadline)
BLAS_CFLAGS = $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   = $(shell pkg-config --libs openblas 2>/dev/null)
HAVE_BLAS   = $(if $(BLAS_LIBS),yes,no)
# OpenBLAS is not linked: the cpu backend loads it when it first opens
# (runtime/backend/backend_cpu.c says why), by these names in order: its
# soname, then the file pkg-config's folder holds. BLAS_LINK: what the
# programs link for it (the bundle: only the runpath that finds its copy).
BLAS_LIBDIR = $(patsubst -L%,%,$(filter -L%,$(BLAS_LIBS)))
BLAS_FILE   = $(firstword $(wildcard $(addsuffix /libopenblas.so,$(patsubst %/,%,$(BLAS_LIBDIR)))))
BLAS_DLOPEN = $(if $(BLAS_FILE),$(shell objdump -p $(BLAS_FILE) 2>/dev/null | sed -n 's/^ *SONAME *//p'):$(realpath $(BLAS_FILE)),libopenblas.so.0)
BLAS_LINK   =
# GLPK is optional: `sim --optimal` solves the exact schedule's MILP with it
# (interp/bound/exact_glpk.c, docs/bound.md#the-exact-optimum); without it the
# option says so.
HAVE_GLPK   = $(shell printf '\043include <glpk.h>\n' | $(CC) -E - >/dev/null 2>&1 && echo yes || echo no)
GLPK_CFLAGS = $(if $(filter yes,$(HAVE_GLPK)),-DSC_HAVE_GLPK)
GLPK_LIBS   = $(if $(filter yes,$(HAVE_GLPK)),-lglpk)
LDLIBS     += $(GLPK_LIBS)
# MPI is optional: without it `run` works with threads only. With it, the
# MPI transport is a module, libstagecraft_mpi.so beside the executable, the
# only object that links MPI: runtime/transport/mpi_load.c loads it when
# `run` is started by mpirun, so that no other start loads the MPI stack
# (runtime/transport/mpi_api.h says why).
MPI_CFLAGS  = $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS    = $(shell pkg-config --libs ompi-c 2>/dev/null)
HAVE_MPI    = $(if $(MPI_LIBS),yes,no)
MPI_MOD_C  := runtime/transport/transport_mpi.c runtime/transport/mpi_world.c runtime/transport/mpi_bell.c
MPI_MODULE  = $(if $(MPI_LIBS),$(BUILD)/libstagecraft_mpi.so)
# CUDA is optional. With nvcc (on PATH or /usr/local/cuda/bin) everything
# that needs CUDA, cuBLAS or NCCL goes into one module, libstagecraft_cuda.so
# beside the executable: the cuda backend, the cuda-local transport, the nccl
# transport when nccl.h is there, and the kernels (runtime/cuda/*.cu, the only
# files nvcc compiles; the rest is C compiled with CC). The executable does
# not link CUDA: runtime/device/cuda_load.c loads the module when --backend
# cuda asks for it (runtime/cuda/cuda_api.h says why), and the module does
# not link NCCL: it loads libnccl.so.2 when the nccl transport is chosen
# (nccl_lib.c). Kernels
# for sm_90 (H100, H200) plus PTX, which newer GPUs compile at load time;
# CUDA_ARCH overrides.
NVCC       := $(or $(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc))
CUDA_HOME   = $(patsubst %/bin/nvcc,%,$(realpath $(NVCC)))
CUDA_LIBDIR = $(patsubst %/,%,$(dir $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart.so $(CUDA_HOME)/lib/libcudart.so $(CUDA_HOME)/targets/*/lib/libcudart.so))))
NCCL_H      = $(firstword $(wildcard $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
CUDA_ARCH  ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
comma      := ,
NVCCFLAGS   = -O2 -std=c++17 $(CUDA_ARCH) -Iruntime -Iinterp -Xcompiler -Wall$(comma)-Wextra$(comma)-fPIC$(comma)-fvisibility=hidden
# CUDA is used when nvcc, the runtime library and cuBLAS's header are all there.
CUDA        = $(if $(and $(NVCC),$(CUDA_LIBDIR),$(wildcard $(CUDA_HOME)/include/cublas_v2.h)),yes)
CUDA_MODULE = $(if $(CUDA),$(BUILD)/libstagecraft_cuda.so)
# The module's loader (runtime/device/cuda_load.c) knows whether nvcc was
# there (for its message); where the module is, it finds at run time.
# Executable and module carry a checksum of the headers between them
# (cuda_api.h): a stale module is refused.
API_HASH   := $(shell cat runtime/cuda/cuda_api.h runtime/backend/backend.h runtime/backend/adamw_k.h runtime/transport/transport.h | cksum | cut -d' ' -f1)UL
# The hash is a flag, not a file: a stamp that changes with it rebuilds the
# objects that carry it (else a Makefile edit could leave two hashes behind).
API_STAMP  := $(BUILD)/api_hash
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(API_STAMP) 2>/dev/null)" = "$(API_HASH)" ] || echo "$(API_HASH)" > $(API_STAMP); })
# The same for the compiler's flags: a build from before a flag changed
# (-fPIC, which the shared libraries need) is rebuilt, never linked half-old.
FLAGS_STAMP := $(BUILD)/cflags
FLAGS_SIG  := $(shell echo '$(CC) $(CFLAGS) $(SAN)' | cksum | cut -d' ' -f1)
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(FLAGS_STAMP) 2>/dev/null)" = "$(FLAGS_SIG)" ] || echo "$(FLAGS_SIG)" > $(FLAGS_STAMP); })
REG_CFLAGS  = $(if $(CUDA),-DSC_HAVE_CUDA) -DSC_CUDA_API_HASH=$(API_HASH)
MOD_CFLAGS  = -fPIC -fvisibility=hidden -DSC_HAVE_CUDA -DSC_CUDA_API_HASH=$(API_HASH) -isystem $(CUDA_HOME)/include $(if $(NCCL_H),-DSC_HAVE_NCCL -isystem $(dir $(NCCL_H)))
MOD_RPATH  ?= $(CUDA_LIBDIR)
MOD_LIBS    = -L$(CUDA_LIBDIR) -Wl,-rpath,'$(MOD_RPATH)' -lcublas -lcudart -lstdc++ -ldl -lpthread -lm
CUDA_MOD_C := runtime/cuda/backend_cuda.c runtime/cuda/backend_cuda_dec.c runtime/cuda/backend_cuda_moe.c runtime/cuda/backend_cuda_graph.c runtime/cuda/cuda_check.c \
              runtime/cuda/transport_cuda_local.c \
              runtime/cuda/transport_nccl.c runtime/cuda/transport_nccl_a2a.c runtime/cuda/nccl_lib.c runtime/cuda/cuda_module.c
CUDA_MOD_OBJ = $(patsubst runtime/%.c,$(BUILD)/cudamod/%.o,$(filter-out $(if $(NCCL_H),,runtime/cuda/transport_nccl.c runtime/cuda/transport_nccl_a2a.c),$(CUDA_MOD_C))) \
               $(patsubst runtime/%.cu,$(BUILD)/cudamod/%.o,$(wildcard runtime/*/*.cu))
CUDA_ECHO   = $(if $(CUDA),yes: $(NVCC) ($(CUDA_ARCH)) with libraries in $(CUDA_LIBDIR); NCCL $(if $(NCCL_H),yes ($(NCCL_H); libnccl.so.2 is loaded at run time),no (GPU threads use cuda-local only)); module $(CUDA_MODULE),$(if $(NVCC),nvcc at $(NVCC) but no CUDA runtime or cuBLAS beside it,no nvcc): CPU only (--backend cuda says it is not built))

# Sources by folder (README.md, Layout); a new file needs no rule.
INTERP_SRC := $(wildcard interp/*.c interp/*/*.c)
LANG_SRC   := $(wildcard lang/*.c lang/*/*.c)
RUNTIME_SRC := $(filter-out $(CUDA_MOD_C) $(MPI_MOD_C),$(wildcard runtime/*.c runtime/*/*.c))
RUNTIME_OBJ = $(RUNTIME_SRC:%.c=$(BUILD)/%.o)
STDLIB     := $(sort $(wildcard stdlib/*.lua))
INTERP_OBJ := $(INTERP_SRC:%.c=$(BUILD)/%.o)
LANG_OBJ   := $(LANG_SRC:%.c=$(BUILD)/%.o) $(BUILD)/stdlib_embed.o
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/%)

all: deps stagecraft $(CUDA_MODULE) $(MPI_MODULE) lib

stagecraft: $(BUILD)/stagecraft
	cp $< $@

RUNTIME_LIBS = $(BLAS_LINK) -ldl -lpthread

$(BUILD)/stagecraft: $(LANG_OBJ) $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(SAN) -o $@ $^ $(LUA_LIBS) $(RL_LIBS) $(RUNTIME_LIBS) $(LDLIBS)

$(BUILD)/libscinterp.a: $(INTERP_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libscruntime.a: $(RUNTIME_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/runtime/%.o: runtime/%.c $(API_STAMP) $(FLAGS_STAMP) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(SAN) $(BLAS_CFLAGS) $(if $(filter %backend_cpu.c,$<),-DSC_BLAS_LIBS='"$(BLAS_DLOPEN)"') $(if $(MPI_LIBS),-DSC_HAVE_MPI) $(REG_CFLAGS) -c $< -o $@

# The MPI module (built only with MPI).
$(BUILD)/mpimod/%.o: runtime/%.c $(FLAGS_STAMP) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(SAN) -fvisibility=hidden $(MPI_CFLAGS) -c $< -o $@

$(BUILD)/libstagecraft_mpi.so: $(MPI_MOD_C:runtime/%.c=$(BUILD)/mpimod/%.o)
	$(CC) $(SAN) -shared $(if $(SAN),,-Wl,-z,defs) -o $@ $^ $(MPI_LIBS) -lpthread

# The module alone, or nothing without MPI (python/setup.py asks for it).
mpi-module: $(MPI_MODULE)

# The CUDA module (built only with nvcc).
$(BUILD)/cudamod/%.o: runtime/%.c $(API_STAMP) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(SAN) $(MOD_CFLAGS) -c $< -o $@

$(BUILD)/cudamod/%.o: runtime/%.cu runtime/cuda/cuda_impl.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/libstagecraft_cuda.so: $(CUDA_MOD_OBJ)
	$(CC) $(SAN) -shared $(if $(SAN),,-Wl,-z,defs) -o $@ $^ $(MOD_LIBS)

$(BUILD)/interp/bound/exact_glpk.o: CFLAGS += $(GLPK_CFLAGS)

$(BUILD)/%.o: %.c $(FLAGS_STAMP) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(SAN) $(LUA_CFLAGS) $(RL_CFLAGS) -c $< -o $@

# The stdlib recipes are compiled into the binary, as source and as the
# bytecode of the Lua linked here (tools/embed.c: loading it skips the parser).
$(BUILD)/embed: tools/embed.c | deps
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O1 $(LUA_CFLAGS) -o $@ $< $(LUA_LIBS)

$(BUILD)/stdlib_embed.c: $(BUILD)/embed $(STDLIB)
	$(BUILD)/embed $(STDLIB) > $@

$(BUILD)/stdlib_embed.o: $(BUILD)/stdlib_embed.c $(FLAGS_STAMP)
	$(CC) -std=c11 $(OPT) $(SAN) -fPIC -c $< -o $@

# libstagecraft (include/stagecraft.h, lang/api): the Lua surface without
# the command line, the REPL and the runtime, and interp. The shared
# library exports the public API only (lang/api/libstagecraft.map) and
# links Lua; the Lua module stagecraft.so exports luaopen_stagecraft only
# and takes Lua from the interpreter that loads it (Debian's lua5.4 has Lua
# linked in: a second copy would be a second Lua). The version is the
# language's (SC_VERSION in lang/core/core.h): the one source.
VERSION    := $(shell sed -n 's/^\#define SC_VERSION "\(.*\)"/\1/p' lang/core/core.h)
LIB_OBJ     = $(filter $(BUILD)/lang/api/% $(BUILD)/lang/engine/% $(BUILD)/lang/lua/% $(BUILD)/lang/core/% $(BUILD)/lang/sandbox/%,$(LANG_OBJ)) \
              $(BUILD)/stdlib_embed.o $(INTERP_OBJ)
LIB_FILES   = $(BUILD)/libstagecraft.a $(BUILD)/libstagecraft.so $(BUILD)/lua/stagecraft.so $(BUILD)/stagecraft.pc

lib: $(LIB_FILES)

$(BUILD)/libstagecraft.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libstagecraft.so: $(LIB_OBJ) lang/api/libstagecraft.map
	$(CC) $(SAN) -shared -Wl,-soname,libstagecraft.so.0 -Wl,--version-script=lang/api/libstagecraft.map \
	  $(if $(SAN),,-Wl,-z,defs) -o $@ $(LIB_OBJ) $(LUA_LIBS) $(LDLIBS)

$(BUILD)/lua/stagecraft.so: $(LIB_OBJ) lang/api/luamodule.map
	@mkdir -p $(dir $@)
	$(CC) $(SAN) -shared -Wl,--version-script=lang/api/luamodule.map -o $@ $(LIB_OBJ) $(LDLIBS)

# The pkg-config file of an install into PREFIX (install writes its own).
PREFIX     ?= /usr/local
$(BUILD)/stagecraft.pc: lang/api/stagecraft.pc.in lang/core/core.h
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@LUA_LIBS@|$(LUA_LIBS)|' -e 's|@GLPK_LIBS@|$(GLPK_LIBS)|' $< > $@

# make install PREFIX=DIR (what `all` builds, from $(BUILD): never the
# ./stagecraft copy, which a make asan's install must not replace): the
# stdlib is compiled into the binary and the
# libraries (nothing is read from the source tree); share/stagecraft/stdlib
# holds the recipes to read and start from. The CUDA module, when built,
# goes beside the binary, where it is loaded from.
D = $(DESTDIR)$(PREFIX)
install: deps $(BUILD)/stagecraft $(CUDA_MODULE) $(MPI_MODULE) $(LIB_FILES)
	install -d $(D)/bin $(D)/lib/pkgconfig $(D)/lib/lua/5.4 $(D)/include $(D)/share/stagecraft/stdlib
	install -m 755 $(BUILD)/stagecraft $(D)/bin/stagecraft
	$(if $(CUDA_MODULE),install -m 755 $(CUDA_MODULE) $(D)/bin/libstagecraft_cuda.so)
	$(if $(MPI_MODULE),install -m 755 $(MPI_MODULE) $(D)/bin/libstagecraft_mpi.so)
	install -m 755 $(BUILD)/libstagecraft.so $(D)/lib/libstagecraft.so.$(VERSION)
	ln -sf libstagecraft.so.$(VERSION) $(D)/lib/libstagecraft.so.0
	ln -sf libstagecraft.so.0 $(D)/lib/libstagecraft.so
	install -m 644 $(BUILD)/libstagecraft.a $(D)/lib/libstagecraft.a
	install -m 755 $(BUILD)/lua/stagecraft.so $(D)/lib/lua/5.4/stagecraft.so
	install -m 644 include/stagecraft.h $(D)/include/stagecraft.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' -e 's|@LUA_LIBS@|$(LUA_LIBS)|' -e 's|@GLPK_LIBS@|$(GLPK_LIBS)|' \
	  lang/api/stagecraft.pc.in > $(D)/lib/pkgconfig/stagecraft.pc
	install -m 644 $(filter-out stdlib/_%,$(STDLIB)) $(D)/share/stagecraft/stdlib/

uninstall:
	rm -f $(D)/bin/stagecraft $(D)/bin/libstagecraft_cuda.so $(D)/bin/libstagecraft_mpi.so $(D)/lib/libstagecraft.so.$(VERSION) \
	  $(D)/lib/libstagecraft.so.0 $(D)/lib/libstagecraft.so $(D)/lib/libstagecraft.a \
	  $(D)/lib/lua/5.4/stagecraft.so $(D)/include/stagecraft.h $(D)/lib/pkgconfig/stagecraft.pc
	rm -rf $(D)/share/stagecraft
	-rmdir -p $(D)/lib/lua/5.4 $(D)/lib/pkgconfig $(D)/bin $(D)/include 2>/dev/null

$(BUILD)/test_%: tests/unit/test_%.c tests/unit/harness.h tests/unit/interp_util.h $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(DEPFLAGS) $(SAN) -o $@ $< $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a $(RUNTIME_LIBS) $(LDLIBS)

# GPU tests and benchmarks: C programs on the backend and executor, built
# with the CUDA backend (and by `make test`, so that CI compiles them).
$(BUILD)/gpu_%: tests/gpu/%.c tests/unit/harness.h $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(DEPFLAGS) $(SAN) -Itests/unit -o $@ $< $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a $(RUNTIME_LIBS) $(LDLIBS)

$(BUILD)/gpubench_%: bench/gpu/%.c $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(DEPFLAGS) $(SAN) -O3 -o $@ $< $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a $(RUNTIME_LIBS) $(LDLIBS)

# The GPU test programs use only the public tables: built everywhere, run on
# a GPU by tests/gpu/run.sh and on the CUDA stand-in by tests/cudastub/run.sh.
GPU_TEST_BIN  = $(patsubst tests/gpu/%.c,$(BUILD)/gpu_%,$(wildcard tests/gpu/*.c))
GPU_BENCH_BIN = $(if $(CUDA),$(patsubst bench/gpu/%.c,$(BUILD)/gpubench_%,$(wildcard bench/gpu/*.c)))

# The CUDA stand-in (tests/cudastub/README.md): a TEST DOUBLE of the CUDA
# runtime, cuBLAS and NCCL on the CPU, never installed. The module's own
# sources (runtime/cuda/*.c, and the kernels of cuda_kernels.cu compiled for
# the host) are built against its headers into $(STUB)/libstagecraft_cuda.so,
# which tests/cudastub/run.sh loads with STAGECRAFT_CUDA_MODULE; its NCCL is
# loaded by the module like libnccl.so.2 (STAGECRAFT_NCCL_LIBRARY). Needs no
# CUDA: it builds and runs on every machine, so CI runs the module on it.
STUB        = $(BUILD)/cudastub
STUB_INC    = -Itests/cudastub/include
STUB_MOD_C  = $(filter-out runtime/cuda/nccl_lib.c,$(CUDA_MOD_C)) runtime/cuda/nccl_lib.c
STUB_OBJ    = $(patsubst runtime/%.c,$(STUB)/mod/%.o,$(STUB_MOD_C)) \
              $(patsubst runtime/cuda/%.cu,$(STUB)/mod/%_host.o,$(wildcard runtime/cuda/*.cu))
CXX        ?= c++
STUB_LIBS   = $(STUB)/libsc_cudastub.so $(STUB)/libsc_ncclstub.so $(STUB)/libstagecraft_cuda.so
STUB_H     := $(wildcard tests/cudastub/*.h tests/cudastub/include/*.h)

# The stand-in's own files (tests/cudastub/cudastub_impl.h lists them), an
# object each, so that tests/py/layout.py sees their calls in $(STUB)/obj.
STUB_CUDA_C = $(addprefix tests/cudastub/,cudastub.c cudastub_launch.c cudastub_stream.c \
              cudastub_memory.c cudastub_device.c cudastub_graph.c cublasstub.c)
STUB_NCCL_C = $(addprefix tests/cudastub/,ncclstub.c ncclstub_group.c ncclstub_comm.c ncclstub_coll.c)

$(STUB)/obj/%.o: tests/cudastub/%.c $(STUB_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) -fPIC $(STUB_INC) -c $< -o $@

$(STUB)/libsc_cudastub.so: $(patsubst tests/cudastub/%.c,$(STUB)/obj/%.o,$(STUB_CUDA_C))
	$(CC) $(CFLAGS) $(SAN) -fPIC -shared -Wl,-soname,libsc_cudastub.so -o $@ $^ -lpthread

$(STUB)/libsc_ncclstub.so: $(patsubst tests/cudastub/%.c,$(STUB)/obj/%.o,$(STUB_NCCL_C)) $(STUB)/libsc_cudastub.so
	$(CC) $(CFLAGS) $(SAN) -fPIC -shared -o $@ $(filter %.o,$^) -L$(STUB) -lsc_cudastub -Wl,-rpath,'$$ORIGIN' -lpthread

$(STUB)/mod/%.o: runtime/%.c $(API_STAMP) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(SAN) -fPIC -fvisibility=hidden -DSC_HAVE_CUDA -DSC_HAVE_NCCL -DSC_CUDA_API_HASH=$(API_HASH) $(STUB_INC) -c $< -o $@

# The kernels on the host (every runtime/cuda/*.cu): each `k<<<grid, block,
# 0, stream>>>(args)` becomes SC_CUDASTUB_LAUNCH(grid, block, stream, k,
# args); a launch the rewrite misses stops the build.
.PRECIOUS: $(STUB)/mod/%_host.cc
$(STUB)/mod/%_host.cc: runtime/cuda/%.cu
	@mkdir -p $(dir $@)
	sed -E 's/([A-Za-z_0-9]+)<<<(.+), ([A-Za-z_0-9]+), 0, ([A-Za-z_0-9]+)>>>\((.*)\);/SC_CUDASTUB_LAUNCH(\2, \3, \4, \1, \5);/' $< > $@
	@! grep -n '<<<' $@ || { echo "error: $< has a launch the stand-in's rewrite does not know"; exit 1; }

$(STUB)/mod/%_host.o: $(STUB)/mod/%_host.cc runtime/cuda/cuda_impl.h $(STUB_H)
	$(CXX) -std=c++17 -O2 -g $(DEPFLAGS) $(SAN) -fPIC -fvisibility=hidden -ffp-contract=off -DSC_CUDASTUB_KERNELS -Wall -Wextra $(STUB_INC) -Iruntime/cuda -Iruntime -Iinterp -c $< -o $@

$(STUB)/libstagecraft_cuda.so: $(STUB_OBJ) $(STUB)/libsc_cudastub.so
	$(CC) $(SAN) -shared $(if $(SAN),,-Wl,-z,defs) -o $@ $(STUB_OBJ) -L$(STUB) -lsc_cudastub -Wl,-rpath,'$$ORIGIN' -lstdc++ -ldl -lpthread -lm

cudastub: $(STUB_LIBS) $(BUILD)/stagecraft $(GPU_TEST_BIN)

# The MPI stop double (tests/mpistop/mpi_stop_double.c): a TEST DOUBLE that
# tests/runtime.sh preloads into the ranks of an mpirun job to stop one rank
# on entering a chosen MPI call; never linked into stagecraft. Without MPI
# (known only once deps has run) nothing is built and the MPI tests skip.
$(BUILD)/libsc_mpistop_double.so: tests/mpistop/mpi_stop_double.c | deps
	@mkdir -p $(dir $@)
	$(if $(MPI_LIBS),$(CC) $(CFLAGS) -fPIC -shared $(MPI_CFLAGS) -o $@ $< $(MPI_LIBS),@echo "note: built without MPI: $@ is not needed")

$(BUILD)/bench_%: bench/bench_%.c $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(DEPFLAGS) $(SAN) -O3 -o $@ $< $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a \
	  $(RUNTIME_LIBS) $(LDLIBS)

# Fuzzing: every tests/fuzz/fuzz_NAME.c is a harness, run on its seed corpus
# tests/fuzz/corpus/NAME/ (and tests/fuzz/NAME.dict when there is one); a
# new harness needs its file only. Instrumented objects go to build-fuzz.
FUZZ_CC    ?= clang
FUZZ_TIME  ?= 60
FUZZ_BUILD := build-fuzz
FUZZ_PKGS  := clang libclang-rt-14-dev
FUZZ_BIN   := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(filter-out $(BUILD)/lang/cli/main.o $(BUILD)/lang/cli/cmd_run.o,$(LANG_OBJ)) $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(LUA_CFLAGS) $(SAN) -fsanitize=fuzzer -o $@ $^ $(LUA_LIBS) $(RL_LIBS) $(RUNTIME_LIBS) $(LDLIBS)

# Missing Debian packages: installed when we are root and apt-get works,
# named otherwise (tools/deps.sh). NODEPS=1 skips the step (a machine that
# must not install anything).
deps:
ifeq ($(NODEPS),)
	@sh tools/deps.sh "$(HAVE_LUA)" "$(HAVE_BLAS)" "$(HAVE_MPI)" "$(DEB_PKGS)" "$(HAVE_GLPK)"
endif

# The two tiers (tests/run.sh): make check, a sample of every suite for
# each edit (the real-PyTorch suites skipped: SC_TORCH=run runs their
# samples); make test, every suite whole. Suites run concurrently.
TEST_DEPS = deps $(BUILD)/stagecraft $(CUDA_MODULE) $(MPI_MODULE) $(LIB_FILES) $(UNIT_BIN) $(GPU_TEST_BIN) $(GPU_BENCH_BIN) \
            $(STUB_LIBS) $(BUILD)/libsc_mpistop_double.so
test: $(TEST_DEPS)
	@BUILD=$(BUILD) SC_TIER=test sh tests/run.sh

check: $(TEST_DEPS)
	@BUILD=$(BUILD) SC_TIER=check sh tests/run.sh

gpu-test: deps $(BUILD)/stagecraft $(CUDA_MODULE) $(GPU_TEST_BIN)
	@BUILD=$(BUILD) sh tests/gpu/run.sh

gpu-bench: deps $(BUILD)/stagecraft $(CUDA_MODULE) $(GPU_BENCH_BIN)
	@BUILD=$(BUILD) sh bench/gpu/run.sh

# A build to carry to a GPU machine that has CUDA, PyTorch and NCCL (as a
# Python wheel) but no package registry, and maybe no Lua or OpenBLAS: Lua is
# linked statically from Debian's liblua5.4.a; OpenBLAS (with its Fortran
# runtime) from Debian's .a files into one private shared object,
# build-gpu/libsc_openblas.so (OpenBLAS's kernels for every CPU are 25 MB,
# once instead of in each of the three programs, so that the folder stays
# well under 64 MiB); MPI and readline are left out. The programs find it
# beside themselves ($$ORIGIN); the CUDA module (built with this machine's
# nvcc) looks for cuBLAS and the CUDA runtime beside itself, in this
# machine's CUDA folder and in /usr/local/cuda; NCCL it finds at run time
# (runtime/cuda/nccl_lib.c). Copy the tree with build-gpu/ (or only
# build-gpu/run/) and run `make gpu-check` or bench/gpu/session.sh there
# (they build nothing).
GPU_BUNDLE  := build-gpu
LIBDIR      := $(firstword $(wildcard /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib))
STATIC_LUA   = $(firstword $(wildcard $(LIBDIR)/liblua5.4.a))
STATIC_BLAS  = $(firstword $(wildcard $(LIBDIR)/openblas-pthread/libopenblas.a $(LIBDIR)/libopenblas.a))
STATIC_FORT  = $(shell $(CC) -print-file-name=libgfortran.a) $(shell $(CC) -print-file-name=libquadmath.a)
$(GPU_BUNDLE)/libsc_openblas.so:
	@[ -n "$(STATIC_BLAS)" ] || { echo "error: gpu-bundle needs libopenblas.a (libopenblas-dev)"; exit 1; }
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ -Wl,-soname,libsc_openblas.so -Wl,-u,cblas_sgemm -Wl,-u,openblas_set_num_threads \
	  $(STATIC_BLAS) $(STATIC_FORT) -lm -lpthread

# What runs on the GPU machine, without the objects and archives (about 35 of
# the folder's 55 MB): $(GPU_BUNDLE)/run/, the folder to carry there
# (bench/gpu/session.sh, bench/gpu.md "How to run the GPU session").
GPU_BUNDLE_RUN = $(addprefix $(GPU_BUNDLE)/,stagecraft libstagecraft_cuda.so libsc_openblas.so REVISION \
  gpu_test_backend_cuda gpu_test_decoder_cuda gpu_test_moe_cuda gpu_test_graph_cuda) \
  $(patsubst bench/gpu/%.c,$(GPU_BUNDLE)/gpubench_%,$(wildcard bench/gpu/*.c))
gpu-bundle: $(GPU_BUNDLE)/libsc_openblas.so
	@[ -n "$(STATIC_LUA)" ] || { echo "error: gpu-bundle needs liblua5.4.a (liblua5.4-dev)"; exit 1; }
	@[ -n "$(CUDA)" ] || { echo "error: gpu-bundle needs nvcc, the CUDA runtime and cuBLAS (make echo says what is missing)"; exit 1; }
	$(MAKE) NODEPS=1 BUILD=$(GPU_BUNDLE) MPI_LIBS= MPI_CFLAGS= HAVE_READLINE=no HAVE_GLPK=no \
	  LUA_LIBS="$(STATIC_LUA) -lm -ldl" BLAS_DLOPEN=libsc_openblas.so BLAS_LINK="-Wl,-rpath,'\$$\$$ORIGIN'" \
	  MOD_RPATH='$$$$ORIGIN:$(CUDA_LIBDIR):/usr/local/cuda/lib64' \
	  $(GPU_BUNDLE)/stagecraft $(GPU_BUNDLE)/libstagecraft_cuda.so \
	  $(GPU_BUNDLE)/gpu_test_backend_cuda $(GPU_BUNDLE)/gpu_test_decoder_cuda $(GPU_BUNDLE)/gpu_test_moe_cuda $(GPU_BUNDLE)/gpu_test_graph_cuda $(patsubst bench/gpu/%.c,$(GPU_BUNDLE)/gpubench_%,$(wildcard bench/gpu/*.c))
	@git rev-parse HEAD > $(GPU_BUNDLE)/REVISION 2>/dev/null || true
	@rm -rf $(GPU_BUNDLE)/run && mkdir -p $(GPU_BUNDLE)/run && \
	  for f in $(GPU_BUNDLE_RUN); do ln -f $$f $(GPU_BUNDLE)/run/ 2>/dev/null || cp -p $$f $(GPU_BUNDLE)/run/ || exit 1; done
	@echo "gpu-bundle: $(GPU_BUNDLE)/ ($$(du -sh $(GPU_BUNDLE) | cut -f1)); what runs, to carry: $(GPU_BUNDLE)/run/ ($$(du -sh $(GPU_BUNDLE)/run | cut -f1)); needs at run time:"
	@for f in $(GPU_BUNDLE)/stagecraft $(GPU_BUNDLE)/libstagecraft_cuda.so $(GPU_BUNDLE)/libsc_openblas.so; do \
	  echo "  $$f: $$(readelf -d $$f | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | tr '\n' ' ')(runpath $$(readelf -d $$f | sed -n 's/.*RUNPATH.*\[\(.*\)\]/\1/p'))"; \
	  echo "    newest glibc symbol: $$(objdump -T $$f | grep -o 'GLIBC_[0-9.]*' | sort -t. -k2,2n -k3,3n | tail -1)"; \
	done

# On the GPU machine: the environment, the GPU tests, compute-sanitizer
# (memcheck, racecheck) on a small run, the GPU benchmarks: one log
# (tools/gpu_check.sh). Uses build-gpu/ (or build-gpu/run/, what runs, when
# only that was carried) when it is there, else $(BUILD). A session of a few
# minutes runs bench/gpu/session.sh instead (bench/gpu.md).
GPU_CHECK_LOG ?=
gpu-check:
	@sh tools/gpu_check.sh $(firstword $(patsubst %/stagecraft,%,$(wildcard $(GPU_BUNDLE)/stagecraft $(GPU_BUNDLE)/run/stagecraft)) $(BUILD)) $(GPU_CHECK_LOG)

fuzz-deps:
	@if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { return d && n; }' | \
	    $(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing $(FUZZ_PKGS)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(FUZZ_PKGS) >/dev/null \
	      || { echo "error: could not install $(FUZZ_PKGS)"; exit 1; }; \
	  else \
	    echo "error: $(FUZZ_CC) with libFuzzer is missing: install it with 'apt-get install $(FUZZ_PKGS)' (as root)"; exit 1; \
	  fi; \
	fi

# Each harness runs FUZZ_TIME seconds, FUZZ_JOBS of them at a time (the CI
# machine has two cores); any crash, leak, sanitizer report or timeout fails
# the target and leaves the input in build-fuzz/NAME-crash-* (tests/fuzz/run.sh).
# Runaway inputs meet each harness's CPU-time budget (tests/fuzz/cpu_limit.h:
# 60 s of CPU; one seed of fuzz_program renders in 15.5 s under ASan and
# UBSan), not a wall clock that a loaded machine reaches first.
FUZZ_JOBS ?= 2
fuzz: deps fuzz-deps
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) NVCC= OPT="-O1 -g -fno-omit-frame-pointer -DSC_MAX_PASSES=30000L" \
	  SAN="$(FUZZ_FLAGS) -fsanitize=fuzzer-no-link" $(FUZZ_BIN)
	@echo "fuzz: $(words $(FUZZ_BIN)) harnesses, $(FUZZ_TIME) s each, $(FUZZ_JOBS) at a time"
	@printf '%s\n' $(FUZZ_BIN) | xargs -P $(FUZZ_JOBS) -n 1 sh tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_TIME) \
	  || { echo "fuzz: a harness FAILED (above)"; exit 1; }
	@echo "fuzz: all harnesses ran $(FUZZ_TIME) s without a crash, leak or sanitizer report"

# The real-PyTorch tests (tests/torch/*.sh) run under `make test` only.
asan:
	SC_TORCH=skip $(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" test
	@echo "asan: all tests passed under AddressSanitizer and UndefinedBehaviorSanitizer"

bench: all $(BUILD)/bench_interp $(BUILD)/bench_runtime $(BUILD)/bench_auto $(BUILD)/bench_vocab $(BUILD)/bench_bound
	$(BUILD)/bench_interp
	$(BUILD)/bench_runtime
	sh bench/bench_cli.sh
	SC=$(BUILD)/stagecraft sh bench/bench_startup.sh
	SC=$(BUILD)/stagecraft sh bench/bench_plan.sh
	$(BUILD)/stagecraft bench/bench_blocks.lua
	$(BUILD)/stagecraft bench/bench_offload.lua
	SC=$(BUILD)/stagecraft sh bench/bench_steps.sh
	SC=$(BUILD)/stagecraft sh bench/bench_overlap.sh
	sh bench/bench_vshape.sh $(BUILD)/stagecraft
	$(BUILD)/bench_auto
	SC=$(BUILD)/stagecraft sh bench/bench_predict.sh
	SC=$(BUILD)/stagecraft sh bench/bench_hostlink.sh 1
	$(BUILD)/bench_vocab
	$(BUILD)/bench_bound
	AFTER=$(BUILD)/stagecraft sh bench/bench_speed.sh
	SC=$(BUILD)/stagecraft sh bench/bench_decoder.sh
	SC=$(BUILD)/stagecraft sh bench/bench_lengths.sh
	SC=$(BUILD)/stagecraft sh bench/bench_seq1f1b.sh
	SC=$(BUILD)/stagecraft sh bench/bench_moe.sh
	SC=$(BUILD)/stagecraft sh bench/bench_moe_step.sh

echo:
	@echo "CC       = $(CC)"
	@echo "CFLAGS   = $(CFLAGS)"
	@echo "LUA      = $(HAVE_LUA) ($(LUA_CFLAGS) $(LUA_LIBS))"
	@echo "READLINE = $(HAVE_READLINE)$(if $(filter yes,$(HAVE_READLINE)), (REPL on GNU readline), (REPL on a plain line reader))"
	@echo "CUDA     = $(CUDA_ECHO)"
	@echo "BLAS     = $(HAVE_BLAS) ($(BLAS_CFLAGS) $(BLAS_LIBS); loaded at run time as $(BLAS_DLOPEN))"
	@echo "GLPK     = $(HAVE_GLPK)$(if $(filter yes,$(HAVE_GLPK)), (sim --optimal solves the exact MILP), (sim --optimal says it needs GLPK: apt-get install libglpk-dev))"
	@echo "MPI      = $(HAVE_MPI) ($(MPI_LIBS)): $(if $(MPI_LIBS),run under mpirun uses the mpi transport (module $(MPI_MODULE)$(comma) loaded by run under mpirun only),run uses threads only)"

clean:
	rm -rf build build-asan $(GPU_BUNDLE) $(FUZZ_BUILD) stagecraft

.PHONY: all lib install uninstall deps fuzz-deps test check gpu-test gpu-bench gpu-bundle gpu-check cudastub asan fuzz bench echo clean mpi-module
.DELETE_ON_ERROR:

# The headers each object was built from (-MMD -MP above).
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
