#!/usr/bin/env bash
# A lent GPU's work, as one command from the checkout's root there (docs/gpus.md, "A lent GPU, step by step"); the
# machine has JAX and no TensorFlow, and .whl (keras and the command line's typer and pydantic, with what they need)
# and .gpu/photos (benchmarks/gpu_photos.py) travel with the checkout.
#
#   bash benchmarks/gpu_run.sh speed            # benchmarks/gpu_speed.py: the figures of docs/gpus.md
#   bash benchmarks/gpu_run.sh train [MINUTES]  # the kernel-aware network from the shipped weights, pairs made on
#                                               # the device, for MINUTES (default 4); its model comes back
#   bash benchmarks/gpu_run.sh all [MINUTES]    # both
#
# Everything it keeps goes to $OUT (the device tool's folder that comes back). SMOKE=1 runs tiny sizes, to try the
# script on a CPU first (with KERAS_BACKEND=jax and no GPU).
set -euo pipefail
what=${1:-all}
minutes=${2:-4}
out=${OUT:?set OUT to the folder the results go to}
smoke=${SMOKE:-0}
python=${PYTHON:-python3}

export KERAS_BACKEND=jax PYTHONUNBUFFERED=1
if [ -d .whl ] && ! "$python" -c "import keras" 2>/dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
    "$python" -c "import jax, keras; print('jax', jax.__version__, jax.devices(), '| keras', keras.__version__)"
} | tee "$out/device.txt"

if [ "$what" = speed ] || [ "$what" = all ]; then
    smoke_flag=()
    [ "$smoke" = 1 ] && smoke_flag=(--smoke)
    "$python" benchmarks/gpu_speed.py --out "$out/gpu.json" --train-seconds 45 "${smoke_flag[@]}" 2>&1 |
        grep -v "^WARNING: All log messages" | tee "$out/gpu_speed.log"
fi

if [ "$what" = train ] || [ "$what" = all ]; then
    data=/tmp/deblur-gpu-data
    run=/tmp/deblur-gpu-run
    if [ "$smoke" = 1 ]; then
        sizes=(--set data.patch_size=128 --set data.batch_size=2 --set data.val_crop=128 --set data.val_limit=4
            --set train.steps_per_epoch=3 --set train.epochs=2)
    else
        # A fine-tune: the batch a GPU fills, a steady rate; max_minutes ends it (epochs only bound it).
        sizes=(--set data.batch_size=32 --set train.steps_per_epoch=250 --set train.epochs=200
            --set train.learning_rate=0.0001 --set train.schedule=constant --set train.warmup_steps=100)
    fi
    [ -d "$data" ] || "$python" -m deblur data synth --src .gpu/photos --out "$data" --config kernel-aware \
        --pairs-per-photo 1 -q  # benchmarks/gpu_photos.py sized the photos
    "$python" -m deblur train --config kernel-aware --data "$data" --out "$run" \
        --set data.device_pairs=true --set data.synth.varying=0 --set data.synth.clipped_share=0 \
        --set data.synth.jpeg_share=0 --set train.init=deblur/weights/kernel_aware/model.keras \
        --set train.max_minutes="$minutes" --set train.checkpoint_every=250 "${sizes[@]}" 2>&1 |
        grep -v "^WARNING: All log messages" | tee "$out/train.log"
    cp "$run/model.keras" "$run/config.yaml" "$run/metrics.jsonl" "$out/"
fi
