# The two commands a user needs (see README.md):
#   make demo   install what is missing for the demo, build orch without the tests, sweep
#               experiments/quickstart.yaml, print the ranking, write its HTML report
#   make test   install what is missing for the tests too, build, run every test through ctest,
#               then the sanitizer tests (make sanitize, make tsan)
#   make sanitize  the LibTorch-free libraries and their unit tests under AddressSanitizer and
#               UndefinedBehaviorSanitizer, in their own build folder (build-asan)
#   make tsan   the unit tests that run threads under ThreadSanitizer (build-tsan)
BUILD     ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
BUILD_TYPE ?= Release
JOBS      ?= $(shell nproc)
DEMO_DB   ?= results/quickstart.db
ORCH_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/orch
export ORCH_CACHE
# What scripts/setup.sh installs (--for): `test` (everything, the default: `make`, `make test`,
# CI) or `demo` (what building orch and the demo need; `make demo` sets it). With `demo`, a fresh
# build folder is configured without the test suites (ORCH_BUILD_TESTS=OFF); with `test`, one
# configured without them is configured again with them. docs/setup.md lists both.
SETUP_FOR ?= test
demo: SETUP_FOR = demo
# CI (CI=true, set by CI services and by .ci/run) builds with warnings as errors.
CMAKE_FLAGS ?=
ifeq ($(CI),true)
CMAKE_FLAGS += -DORCH_WERROR=ON
endif
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c

.PHONY: all setup configure build test sanitize tsan demo clean

all: build

# setup.sh is idempotent; it prints TORCH_PREFIX=... last, which configure reads, and on a
# machine without a CUDA toolkit the CMake settings for the one it assembled from NVIDIA's
# wheels (CMAKE_CUDA_COMPILER=..., CUDAToolkit_ROOT=..., CUDA_TOOLKIT_ROOT_DIR=...).
setup:
	@mkdir -p $(BUILD)
	@bash scripts/setup.sh --for $(SETUP_FOR) | tee $(BUILD)/setup.log | grep -v -E '^[A-Za-z_]+='

configure: setup
	@prefix=$$(sed -n 's/^TORCH_PREFIX=//p' $(BUILD)/setup.log); \
	cuda=(); \
	for key in CMAKE_CUDA_COMPILER CUDAToolkit_ROOT CUDA_TOOLKIT_ROOT_DIR; do \
	  value=$$(sed -n "s/^$$key=//p" $(BUILD)/setup.log); \
	  if [ -n "$$value" ]; then cuda+=("-D$$key=$$value"); fi; \
	done; \
	tests=$(if $(filter demo,$(SETUP_FOR)),OFF,ON); \
	if [ ! -f $(BUILD)/build.ninja ]; then \
	  cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DORCH_BUILD_TESTS=$$tests \
	    -DCMAKE_PREFIX_PATH="$$prefix" "$${cuda[@]}" $(CMAKE_FLAGS) --log-level=WARNING 2>&1 | grep -v -i kineto || true; \
	elif [ $$tests = ON ] && grep -q '^ORCH_BUILD_TESTS:BOOL=OFF$$' $(BUILD)/CMakeCache.txt; then \
	  echo "make: $(BUILD) was configured without the tests (make demo); adding them"; \
	  cmake -S . -B $(BUILD) -DORCH_BUILD_TESTS=ON --log-level=WARNING 2>&1 | grep -v -i kineto || true; \
	fi
	@test -f $(BUILD)/build.ninja || { echo "make: CMake configuration failed" >&2; exit 1; }
	@if [ $(SETUP_FOR) != demo ] && grep -q '^ORCH_BUILD_TESTS:BOOL=OFF$$' $(BUILD)/CMakeCache.txt; then \
	  echo "make: CMake configuration with the tests failed" >&2; exit 1; \
	fi

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The sanitizer tests come after the main suite, so a failure there is reported first and
# costs no sanitizer build; `make test` is what CI (.ci/run) runs.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory sanitize
	$(MAKE) --no-print-directory tsan

# No LibTorch, no CUDA (ORCH_WITH_TORCH=OFF): only what the sanitizers can see whole. ASan and
# UBSan findings abort the test that made them; ctest prints the report. Warnings are not
# errors here (cmake/orch_sanitize.cmake says why); the main build checks them.
sanitize: setup
	@if [ ! -f $(ASAN_BUILD)/build.ninja ]; then \
	  cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DORCH_WITH_TORCH=OFF -DORCH_SANITIZE=ON --log-level=WARNING; \
	fi
	@test -f $(ASAN_BUILD)/build.ninja || { echo "make: CMake configuration failed" >&2; exit 1; }
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS)

# ThreadSanitizer on the torch-free build's threads (cmake/orch_sanitize.cmake says which):
# only the unit-test binary is built, and ctest runs its threaded cases in one test.
tsan: setup
	@if [ ! -f $(TSAN_BUILD)/build.ninja ]; then \
	  cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DORCH_WITH_TORCH=OFF -DORCH_TSAN=ON --log-level=WARNING; \
	fi
	@test -f $(TSAN_BUILD)/build.ninja || { echo "make: CMake configuration failed" >&2; exit 1; }
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target orch_unit_tests
	ctest --test-dir $(TSAN_BUILD) --output-on-failure -R '^tsan:'

demo: build
	@mkdir -p $(dir $(DEMO_DB))
	./$(BUILD)/orch --db $(DEMO_DB) sweep experiments/quickstart.yaml
	@echo
	./$(BUILD)/orch --db $(DEMO_DB) rank --sweep quickstart
	@echo
	./$(BUILD)/orch --db $(DEMO_DB) report --sweep quickstart -o $(basename $(DEMO_DB)).html
	@echo "report: $(abspath $(basename $(DEMO_DB)).html) (open it in a browser)"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
