# ropelab: two commands do everything on a fresh Debian machine.
#   make test   install dependencies, check the C++ format, build, run the test suite
#   make demo   install dependencies, build, prepare the Bible corpus, train the toy
#               English->Spanish translator (~6 min), print BLEU/chrF and translations
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build test lint demo demo-tiny clean sanitize fuzz format cuda-check

all: build

deps:
	@bash scripts/install_deps.sh

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

configure: deps $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: lint build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Every C++ file git tracks follows .clang-format: `make format` rewrites them, `make lint`
# (part of `make test`) fails on the first that does not.
CXX_FILES = $(shell git ls-files '*.cpp' '*.h' '*.cu' '*.inc')

# The rooms of src/ropelab are layers (scripts/layers.txt, ARCHITECTURE.md): no include goes up.
# The build-config switches are 0 or 1 (ropelab/build_config.h): test them with #if, which
# -Werror=undef turns into an error where the header is missing; #ifdef would be always true.
# Positional arguments are named in capitals (CONFIG): CLI11 2.4 and later refuse a positional
# whose name equals a long option's, as `train config` beside `--config` was
# (scripts/check_cli_names.py reads every literal option name of apps/).
# Files and functions keep to the house's sizes (scripts/check_sizes.py): src/ropelab outside
# ops/ 450 lines a file, apps/ 120, tests/ 600; 80 lines a function or test body, 30 an app's
# callback; scripts/sizes_known.txt lists the exceptions left, each of which may only shrink.
lint: deps
	@clang-format --dry-run --Werror $(CXX_FILES)
	@echo "lint: $(words $(CXX_FILES)) C++ files follow .clang-format"
	@! git grep -n -E '#\s*if(n?def\s+|.*defined\s*\(?\s*)ROPELAB_WITH_' -- $(CXX_FILES) || \
	  { echo "lint: ROPELAB_WITH_* is always defined (0 or 1): use #if, not #ifdef or defined()"; exit 1; }
	@python3 scripts/check_cli_names.py
	@python3 scripts/check_layers.py
	@python3 scripts/check_sizes.py

demo: build
	bash scripts/demo.sh

demo-tiny: build
	bash scripts/demo_tiny.sh

sanitize: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROPELAB_SANITIZE=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS)

# libFuzzer (clang, with ASan and UBSan) on the config loader, the corpus readers and the
# BLEU/chrF scorer, FUZZ_SECONDS each, from the seed inputs in fuzz/seeds; findings fail the target.
FUZZ_SECONDS ?= 60
fuzz:
	@bash scripts/install_deps.sh fuzz
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROPELAB_FUZZ=ON -DROPELAB_TESTS=OFF
	cmake --build build-fuzz -j $(JOBS) --target ropelab_fuzz_config ropelab_fuzz_corpus ropelab_fuzz_bleu
	bash fuzz/run.sh build-fuzz $(FUZZ_SECONDS)

# Compiles the CUDA kernels with nvcc and the CUDA branches of the C++ code (no GPU needed;
# see docs/cuda.md); with a CUDA-enabled LibTorch it builds and links everything.
cuda-check: deps
	bash scripts/cuda_check.sh

format:
	clang-format -i $(CXX_FILES)

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-cuda build-cuda-check build-gpu
