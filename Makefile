# stagecraft — build, test, sanitize.
#   make            build ./stagecraft (installs missing Debian packages as root)
#   make test       C unit tests, Lua tests of the DSL, command-line tests
#   make asan       the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz       libFuzzer harnesses tests/fuzz/fuzz_*.c, FUZZ_TIME s each (clang)
#   make bench      benchmarks (print figures; not pass/fail)
#   make gpu-test   the CUDA backend on a GPU (tests/gpu/run.sh; skips without one)
#   make gpu-bench  GPU benchmarks (bench/gpu/run.sh)
#   make echo       what the build decided
# With nvcc (on PATH or /usr/local/cuda/bin) the CUDA backend and the CUDA
# transports are built in; `make NVCC=` builds for the CPU only.
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wformat=2 -Wno-format-nonliteral -Werror=implicit-function-declaration
CFLAGS  += -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) $(WARN) -Iinterp -Ilang -Iruntime
SAN     :=
LDLIBS  += -lm

# Lua 5.4 and readline come from Debian (liblua5.4-dev, libreadline-dev); the
# tests drive the REPL and check exports with python3, xmllint, rsvg-convert;
# the CPU runtime uses OpenBLAS (CBLAS) and OpenMPI.
DEB_PKGS := liblua5.4-dev libreadline-dev pkg-config python3 libxml2-utils librsvg2-bin \
            libopenblas-dev libopenmpi-dev openmpi-bin
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
# MPI is optional: without it `run` works with threads only.
MPI_CFLAGS  = $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS    = $(shell pkg-config --libs ompi-c 2>/dev/null)
HAVE_MPI    = $(if $(MPI_LIBS),yes,no)
# CUDA is optional. With nvcc (on PATH or /usr/local/cuda/bin) everything
# that needs CUDA, cuBLAS or NCCL goes into one module, libstagecraft_cuda.so
# beside the executable: the cuda backend, the cuda-local transport, the nccl
# transport when nccl.h is there, and the kernels (runtime/cuda/*.cu, the only
# files nvcc compiles; the rest is C compiled with CC). The executable does
# not link CUDA: backend.c loads the module when --backend cuda asks for it
# (runtime/cuda/cuda_api.h says why). Kernels for sm_90 (H100, H200) plus PTX,
# which newer GPUs compile at load time; CUDA_ARCH overrides.
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
# The registry (backend.c) knows whether there is a module and where it was built.
REG_CFLAGS  = $(if $(CUDA),-DSC_HAVE_CUDA -DSC_CUDA_MODULE='"$(abspath $(CUDA_MODULE))"')
MOD_CFLAGS  = -fPIC -fvisibility=hidden -DSC_HAVE_CUDA -isystem $(CUDA_HOME)/include $(if $(NCCL_H),-DSC_HAVE_NCCL)
MOD_LIBS    = -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) $(if $(NCCL_H),-lnccl) -lcublas -lcudart -lstdc++ -lpthread -lm
CUDA_MOD_C := runtime/cuda/backend_cuda.c runtime/cuda/transport_cuda_local.c \
              runtime/cuda/transport_nccl.c runtime/cuda/cuda_module.c
CUDA_MOD_OBJ = $(patsubst runtime/%.c,$(BUILD)/cudamod/%.o,$(filter-out $(if $(NCCL_H),,runtime/cuda/transport_nccl.c),$(CUDA_MOD_C))) \
               $(patsubst runtime/%.cu,$(BUILD)/cudamod/%.o,$(wildcard runtime/*/*.cu))
CUDA_ECHO   = $(if $(CUDA),yes: $(NVCC) ($(CUDA_ARCH)) with libraries in $(CUDA_LIBDIR); NCCL $(if $(NCCL_H),yes ($(NCCL_H)),no (GPU threads use cuda-local only)); module $(CUDA_MODULE),$(if $(NVCC),nvcc at $(NVCC) but no CUDA runtime or cuBLAS beside it,no nvcc): CPU only (--backend cuda says it is not built))

# Sources by folder (README.md, Layout); a new file needs no rule.
INTERP_SRC := $(wildcard interp/*.c interp/*/*.c)
LANG_SRC   := $(wildcard lang/*.c lang/*/*.c)
RUNTIME_SRC := $(filter-out $(CUDA_MOD_C),$(wildcard runtime/*.c runtime/*/*.c))
INTERP_H   := $(wildcard interp/*.h interp/*/*.h)
LANG_H     := $(wildcard lang/*.h lang/*/*.h)
RUNTIME_H  := $(wildcard runtime/*.h runtime/*/*.h)
RUNTIME_OBJ = $(RUNTIME_SRC:%.c=$(BUILD)/%.o)
STDLIB     := $(sort $(wildcard stdlib/*.lua))
INTERP_OBJ := $(INTERP_SRC:%.c=$(BUILD)/%.o)
LANG_OBJ   := $(LANG_SRC:%.c=$(BUILD)/%.o) $(BUILD)/stdlib_embed.o
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/%)

all: deps stagecraft $(CUDA_MODULE)

stagecraft: $(BUILD)/stagecraft
	cp $< $@

RUNTIME_LIBS = $(BLAS_LIBS) $(MPI_LIBS) -ldl -lpthread

$(BUILD)/stagecraft: $(LANG_OBJ) $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(SAN) -o $@ $^ $(LUA_LIBS) $(RL_LIBS) $(RUNTIME_LIBS) $(LDLIBS)

$(BUILD)/libscinterp.a: $(INTERP_OBJ)
	ar rcs $@ $^

$(BUILD)/libscruntime.a: $(RUNTIME_OBJ)
	ar rcs $@ $^

$(BUILD)/runtime/%.o: runtime/%.c $(INTERP_H) $(RUNTIME_H) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) $(BLAS_CFLAGS) $(if $(MPI_LIBS),-DSC_HAVE_MPI $(MPI_CFLAGS)) $(REG_CFLAGS) -c $< -o $@

# The CUDA module (built only with nvcc).
$(BUILD)/cudamod/%.o: runtime/%.c $(INTERP_H) $(RUNTIME_H) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) $(MOD_CFLAGS) -c $< -o $@

$(BUILD)/cudamod/%.o: runtime/%.cu runtime/cuda/cuda_impl.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/libstagecraft_cuda.so: $(CUDA_MOD_OBJ)
	$(CC) $(SAN) -shared $(if $(SAN),,-Wl,-z,defs) -o $@ $^ $(MOD_LIBS)

$(BUILD)/%.o: %.c $(INTERP_H) $(LANG_H) $(RUNTIME_H) | deps
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) $(LUA_CFLAGS) $(RL_CFLAGS) -c $< -o $@

# The stdlib recipes are compiled into the binary.
$(BUILD)/embed: tools/embed.c
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O1 -o $@ $<

$(BUILD)/stdlib_embed.c: $(BUILD)/embed $(STDLIB)
	$(BUILD)/embed $(STDLIB) > $@

$(BUILD)/stdlib_embed.o: $(BUILD)/stdlib_embed.c
	$(CC) -std=c11 $(OPT) $(SAN) -c $< -o $@

$(BUILD)/test_%: tests/unit/test_%.c tests/unit/harness.h tests/unit/interp_util.h $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a $(RUNTIME_LIBS) $(LDLIBS)

# GPU tests and benchmarks: C programs on the backend and executor, built
# with the CUDA backend (and by `make test`, so that CI compiles them).
$(BUILD)/gpu_%: tests/gpu/%.c tests/unit/harness.h $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(SAN) -Itests/unit -o $@ $< $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a $(RUNTIME_LIBS) $(LDLIBS)

$(BUILD)/gpubench_%: bench/gpu/%.c $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(SAN) -O3 -o $@ $< $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a $(RUNTIME_LIBS) $(LDLIBS)

GPU_TEST_BIN  = $(if $(CUDA),$(patsubst tests/gpu/%.c,$(BUILD)/gpu_%,$(wildcard tests/gpu/*.c)))
GPU_BENCH_BIN = $(if $(CUDA),$(patsubst bench/gpu/%.c,$(BUILD)/gpubench_%,$(wildcard bench/gpu/*.c)))

$(BUILD)/bench_%: bench/bench_%.c $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(SAN) -O3 -o $@ $< $(BUILD)/libscruntime.a $(BUILD)/libscinterp.a \
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

# Missing Debian packages: installed when we are root, named otherwise.
deps:
	@missing=""; \
	[ "$(HAVE_LUA)" = yes ] || missing="$$missing lua5.4"; \
	[ "$(HAVE_BLAS)" = yes ] || missing="$$missing openblas"; \
	{ [ "$(HAVE_MPI)" = yes ] && command -v mpirun >/dev/null; } || missing="$$missing openmpi"; \
	for t in python3 xmllint rsvg-convert; do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing $(DEB_PKGS) (missing:$$missing)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_PKGS) >/dev/null \
	      || { echo "error: could not install $(DEB_PKGS)"; exit 1; }; \
	  elif [ "$(HAVE_LUA)" = no ] || [ "$(HAVE_BLAS)" = no ]; then \
	    echo "error: missing:$$missing: install them with 'apt-get install $(DEB_PKGS)' (as root)"; exit 1; \
	  else \
	    echo "note: missing:$$missing ('run' uses threads only without OpenMPI; the tests need python3, xmllint, rsvg-convert)"; \
	  fi; \
	fi

test: deps $(BUILD)/stagecraft $(CUDA_MODULE) $(UNIT_BIN) $(GPU_TEST_BIN) $(GPU_BENCH_BIN)
	@BUILD=$(BUILD) sh tests/run.sh

gpu-test: deps $(BUILD)/stagecraft $(CUDA_MODULE) $(GPU_TEST_BIN)
	@BUILD=$(BUILD) sh tests/gpu/run.sh

gpu-bench: deps $(BUILD)/stagecraft $(CUDA_MODULE) $(GPU_BENCH_BIN)
	@BUILD=$(BUILD) sh bench/gpu/run.sh

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

# Each harness runs FUZZ_TIME seconds; any crash, leak, sanitizer report or
# timeout fails the target and leaves the input in build-fuzz/NAME-crash-*.
fuzz: deps fuzz-deps
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) NVCC= OPT="-O1 -g -fno-omit-frame-pointer -DSC_MAX_PASSES=30000L" \
	  SAN="$(FUZZ_FLAGS) -fsanitize=fuzzer-no-link" $(FUZZ_BIN)
	@for f in $(FUZZ_BIN); do \
	  n=$${f##*/fuzz_}; mkdir -p $(FUZZ_BUILD)/corpus/$$n; \
	  dict=; [ -f tests/fuzz/$$n.dict ] && dict=-dict=tests/fuzz/$$n.dict; \
	  echo "fuzz: $$n for $(FUZZ_TIME) s"; \
	  $$f -max_total_time=$(FUZZ_TIME) -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/$$n- $$dict $(FUZZ_BUILD)/corpus/$$n tests/fuzz/corpus/$$n \
	    >$(FUZZ_BUILD)/fuzz-$$n.log 2>&1 \
	    || { tail -n 60 $(FUZZ_BUILD)/fuzz-$$n.log; echo "fuzz: $$n FAILED (the input is in $(FUZZ_BUILD)/$$n-crash-*, -leak-*, -timeout-* or -oom-*)"; exit 1; }; \
	  grep -E '^stat::number_of_executed_units|^Done' $(FUZZ_BUILD)/fuzz-$$n.log | tr '\n' ' '; echo; \
	done
	@echo "fuzz: all harnesses ran $(FUZZ_TIME) s without a crash, leak or sanitizer report"

asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" test
	@echo "asan: all tests passed under AddressSanitizer and UndefinedBehaviorSanitizer"

bench: all $(BUILD)/bench_interp $(BUILD)/bench_runtime $(BUILD)/bench_auto
	$(BUILD)/bench_interp
	$(BUILD)/bench_runtime
	sh bench/bench_cli.sh
	$(BUILD)/stagecraft bench/bench_blocks.lua
	$(BUILD)/stagecraft bench/bench_offload.lua
	SC=$(BUILD)/stagecraft sh bench/bench_steps.sh
	$(BUILD)/bench_auto
	SC=$(BUILD)/stagecraft sh bench/bench_predict.sh

echo:
	@echo "CC       = $(CC)"
	@echo "CFLAGS   = $(CFLAGS)"
	@echo "LUA      = $(HAVE_LUA) ($(LUA_CFLAGS) $(LUA_LIBS))"
	@echo "READLINE = $(HAVE_READLINE)$(if $(filter yes,$(HAVE_READLINE)), (REPL on GNU readline), (REPL on a plain line reader))"
	@echo "CUDA     = $(CUDA_ECHO)"
	@echo "BLAS     = $(HAVE_BLAS) ($(BLAS_CFLAGS) $(BLAS_LIBS))"
	@echo "MPI      = $(HAVE_MPI) ($(MPI_LIBS)): $(if $(MPI_LIBS),run under mpirun uses the mpi transport,run uses threads only)"

clean:
	rm -rf build build-asan $(FUZZ_BUILD) stagecraft

.PHONY: all deps fuzz-deps test gpu-test gpu-bench asan fuzz bench echo clean
.DELETE_ON_ERROR:
