#!/usr/bin/env bash
# Every benchmark that needs nothing beyond the repository, run through at its smallest, to find one that no longer
# runs (a name moved in deblur, an option renamed, a count too small to time) before its figures are wanted: a GPU
# session's minutes or a release's table. It checks that each runs, not what it measures: figures at these sizes
# mean nothing. tests/test_benchmark_scripts.py checks in CI that each still imports and parses its options; this
# runs them (about 17 minutes on a 2-core Zen 3, so not in CI). The dev-set benchmarks (shake_quality, shake_labels,
# kernel_aware_gate, kernel_aware_stage2) need ../shared and are run as the model card says.
#
#   bash benchmarks/smoke.sh [NAME ...]    # NAME as in benchmarks/NAME.py; default: every one below
#
# Each runs in a scratch folder, its output kept there (named at the end); a failed one shows its last lines, and the
# script exits 1 if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export TF_CPP_MIN_LOG_LEVEL=2 PYTHONUNBUFFERED=1
python=${PYTHON:-python}

declare -A commands=(
    [predict_speed]="--timed pretrained --sizes 0.3 --photos 1 --runtime auto"
    [runtimes]="--repeats 1 --sizes 128x72"
    [serve_latency]="--photo small.png --photos 2 --requests 2"
    [serve_load]="--clients 2 --requests 4 --queue 2"
    [serve_video_latency]="--photos 1 --frames 2"
    [video_speed]="--sizes 360 --frames 2 --no-memory"
    [video_flicker]="--frames 2 --size 72"
    [train_speed]="--steps 3"
    [scale]="--workers 1 --size 128x72 --few 1 --many 2"
    [export_formats]="--photo small.png --data pairs --repeats 1"
    [norm_gradient]="--precision float32 --rounds 1"
    [step_primitives]="--precision float32 --steps 1"
    [weight_grad]="--width 8 --patch 32 --batch 1 --runs 2"
    [gpu_photos]="pairs/sharp photos --max-side 96 --min-side 64"
    [gpu_speed]="--smoke --out gpu.json"
)
order=(predict_speed runtimes serve_latency serve_load serve_video_latency video_speed video_flicker train_speed
    scale export_formats norm_gradient step_primitives weight_grad gpu_photos gpu_speed)
[ $# -gt 0 ] && order=("$@")
for name in "${order[@]}"; do
    [ -n "${commands[$name]+set}" ] || { echo "smoke.sh: no benchmark named $name (known: ${!commands[*]})" >&2; exit 2; }
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/deblur-bench-smoke.XXXXXX")
cd "$scratch"
# What the commands above are given: a small photo and two small blurry/sharp pairs.
"$python" - << 'EOF'
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data

photo = Image.fromarray(data.astronaut()).resize((128, 128))
photo.save("small.png")
for kind in ("blur", "sharp"):
    Path("pairs", kind).mkdir(parents=True)
for index, crop in enumerate(((0, 0), (64, 0))):
    sharp = np.asarray(Image.fromarray(data.astronaut()).resize((256, 256)))[crop[0]:crop[0] + 96, :128]
    blurry = (sharp.astype(np.float32) + np.roll(sharp, 2, axis=1) + np.roll(sharp, 4, axis=1)) / 3
    Image.fromarray(sharp).save(f"pairs/sharp/{index}.png")
    Image.fromarray(blurry.round().astype(np.uint8)).save(f"pairs/blur/{index}.png")
EOF

failed=()
for name in "${order[@]}"; do
    started=$SECONDS
    # shellcheck disable=SC2086  # the options are words
    if [ "$name" = gpu_speed ]; then
        KERAS_BACKEND=jax "$python" "$root/benchmarks/$name.py" ${commands[$name]} > "$name.log" 2>&1
    else
        "$python" "$root/benchmarks/$name.py" ${commands[$name]} > "$name.log" 2>&1
    fi
    status=$?
    if [ "$status" = 0 ]; then
        echo "$name: ran through ($((SECONDS - started)) s)"
    else
        echo "$name: FAILED with exit status $status ($((SECONDS - started)) s); its last lines:"
        grep -v -E "^(WARNING: All log messages|[IEW][0-9]{4} )" "$name.log" | tail -8 | sed 's/^/    /'
        failed+=("$name")
    fi
done
echo "outputs: $scratch"
if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]}"
    exit 1
fi
