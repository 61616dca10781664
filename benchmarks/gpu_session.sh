#!/usr/bin/env bash
# The GPU figures of `gpu.py` on a lent machine that gets the checkout alone and returns only the
# files under $OUT, in calls of under 10 minutes (a machine with a CUDA GPU and 16 cores), most
# needed first:
#
#   bash benchmarks/gpu_session.sh 1   # the CUDA tests; every header model at FairQuant's time
#                                      # (at most 240 s) and AC-5 for 240 s, 8 at a time
#   bash benchmarks/gpu_session.sh 2   # AC-5 for 240 s on 8 worker processes sharing the GPU,
#                                      # then the per-row audit
#   bash benchmarks/gpu_session.sh 3   # box-budget refinements of every header model, the
#                                      # kernels, and what a run leaves to the host
#
# Before: link the models into the checkout (`ln -s ../shared/benchmarks/models .bench`, with
# `/.bench` in `.git/info/exclude`) and carry `.bench/adult`, `.bench/bank` and `.bench/german`.
# After each call: copy the returned `gpu.json` over `benchmarks/results/gpu.json` (the next call
# then starts from the figures so far) and rewrite the table with `gpu.py --report-only`.
set -u
part=${1:?"which part: 1, 2 or 3"}
out=${OUT:?"OUT: the folder whose files come back"}
export FAIRCERT_BENCHMARK_MODELS=.bench PYTHONPATH=src PYTHONUNBUFFERED=1
cp benchmarks/results/gpu.json "$out/"
gpu() { python3 benchmarks/gpu.py --device cuda --out "$out/gpu" "$@"; }
case "$part" in
1)
    timeout 180 python3 -m pytest -q -p no:cacheprovider tests/test_backend.py tests/test_backend_runs.py \
        tests/test_resident.py > "$out/cuda_tests.txt" 2>&1
    tail -3 "$out/cuda_tests.txt"
    gpu --no-refine --timed --cap 240 --long AC-5:240 --jobs 8
    ;;
2)
    gpu --no-refine --long AC-5:240:8 --audit --jobs 2
    ;;
3)
    gpu --models all --no-two-workers --jobs 8
    gpu --no-refine --wide-steps 2G --jobs 8
    ;;
*)
    echo "part must be 1, 2 or 3" >&2
    exit 2
    ;;
esac
