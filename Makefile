# stagecraft — build, test, sanitize.
#   make            build ./stagecraft (installs missing Debian packages as root)
#   make test       C unit tests, Lua tests of the DSL, command-line tests
#   make asan       the same under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      benchmarks (print figures; not pass/fail)
#   make echo       what the build decided
CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wformat=2 -Wno-format-nonliteral -Werror=implicit-function-declaration
CFLAGS  += -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) $(WARN) -Iinterp -Ilang
SAN     :=
LDLIBS  += -lm

# Lua 5.4 and readline come from Debian (liblua5.4-dev, libreadline-dev).
DEB_PKGS := liblua5.4-dev libreadline-dev pkg-config
# Recursive (=): evaluated when used, i.e. after `deps` has installed them.
LUA_CFLAGS = $(shell pkg-config --cflags lua5.4 2>/dev/null)
LUA_LIBS   = $(shell pkg-config --libs lua5.4 2>/dev/null)
HAVE_LUA   = $(if $(LUA_LIBS),yes,no)
NVCC       := $(shell command -v nvcc 2>/dev/null)

INTERP_SRC := $(wildcard interp/*.c)
LANG_SRC   := $(wildcard lang/*.c)
STDLIB     := $(sort $(wildcard stdlib/*.lua))
INTERP_OBJ := $(INTERP_SRC:%.c=$(BUILD)/%.o)
LANG_OBJ   := $(LANG_SRC:%.c=$(BUILD)/%.o) $(BUILD)/stdlib_embed.o
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/%)

all: deps stagecraft

stagecraft: $(BUILD)/stagecraft
	cp $< $@

$(BUILD)/stagecraft: $(LANG_OBJ) $(BUILD)/libscinterp.a
	$(CC) $(SAN) -o $@ $^ $(LUA_LIBS) $(LDLIBS)

$(BUILD)/libscinterp.a: $(INTERP_OBJ)
	ar rcs $@ $^

$(BUILD)/%.o: %.c $(wildcard interp/*.h lang/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SAN) $(LUA_CFLAGS) -c $< -o $@

# The stdlib recipes are compiled into the binary.
$(BUILD)/embed: tools/embed.c
	@mkdir -p $(BUILD)
	$(CC) -std=c11 -O1 -o $@ $<

$(BUILD)/stdlib_embed.c: $(BUILD)/embed $(STDLIB)
	$(BUILD)/embed $(STDLIB) > $@

$(BUILD)/stdlib_embed.o: $(BUILD)/stdlib_embed.c
	$(CC) -std=c11 $(OPT) $(SAN) -c $< -o $@

$(BUILD)/test_%: tests/unit/test_%.c tests/unit/harness.h tests/unit/interp_util.h $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(SAN) -o $@ $< $(BUILD)/libscinterp.a $(LDLIBS)

$(BUILD)/bench_%: bench/bench_%.c $(BUILD)/libscinterp.a
	$(CC) $(CFLAGS) $(SAN) -O3 -o $@ $< $(BUILD)/libscinterp.a $(LDLIBS)

# Missing Debian packages: installed when we are root, named otherwise.
deps:
	@if [ "$(HAVE_LUA)" = no ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing $(DEB_PKGS)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_PKGS) >/dev/null \
	      || { echo "error: could not install $(DEB_PKGS)"; exit 1; }; \
	  else \
	    echo "error: Lua 5.4 is missing: install it with 'apt-get install $(DEB_PKGS)' (as root)"; exit 1; \
	  fi; \
	fi

test: deps $(BUILD)/stagecraft $(UNIT_BIN)
	@BUILD=$(BUILD) sh tests/run.sh

asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" test
	@echo "asan: all tests passed under AddressSanitizer and UndefinedBehaviorSanitizer"

bench: all $(BUILD)/bench_interp $(BUILD)/bench_auto
	$(BUILD)/bench_interp
	sh bench/bench_cli.sh
	$(BUILD)/bench_auto

echo:
	@echo "CC       = $(CC)"
	@echo "CFLAGS   = $(CFLAGS)"
	@echo "LUA      = $(HAVE_LUA) ($(LUA_CFLAGS) $(LUA_LIBS))"
	@echo "CUDA     = $(if $(NVCC),nvcc found at $(NVCC) (the CUDA backend is not built yet),no nvcc: CPU only)"
	@echo "MPI      = not used yet (the CPU runtime comes with issue 5)"

clean:
	rm -rf build build-asan stagecraft

.PHONY: all deps test asan bench echo clean
.DELETE_ON_ERROR:
