# Shared by the device pipelines (pipeline.sh, tune/pipeline.sh): the carried wheels and the CUDA
# build of llama.cpp's llama-server. Needs D (the carried .dev folder), S (the work folder) and say().
install_wheels() {
  [ -f /tmp/site/.ok ] && return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $D/whl/*.whl \
    > $S/out/pip.log 2>&1 && touch /tmp/site/.ok; say "wheels installed rc=$?"
}
build() {
  [ -x $S/llama/build/bin/llama-server ] && return 0
  mkdir -p $S/llama && tar xJf $D/llama.cpp.tar.xz -C $S/llama --strip-components=1
  cd $S/llama && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DGGML_CUDA_NCCL=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF \
    > $S/out/build.log 2>&1 && cmake --build build --target llama-server -j 16 >> $S/out/build.log 2>&1
  local rc=$?; say "build rc=$rc ($(ls -la build/bin/llama-server 2>&1))"; return $rc
}
