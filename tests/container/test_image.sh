#!/usr/bin/env bash
# The container, as a deployer uses it: the Dockerfile built on a base made from Debian's own packages (no
# registry can be pulled here), then `deblur --help`, `deblur predict` on a real photo in a mounted folder, bad
# input, the user it runs as, and `deblur serve` answering from the host and stopping cleanly. CI runs it after
# the tests (.ci/run installs buildah, podman, runc and debootstrap); it prints how long each part took.
#
# buildah and podman keep images in vfs storage and run with runc, the combination that works on these machines
# (podman's default runtime, crun, fails here on rlimits and cgroups).
set -euo pipefail
cd "$(dirname "$0")/../.."
image=${DEBLUR_IMAGE:-deblur:ci}
storage=(--storage-driver vfs)
podman=(podman "${storage[@]}" --runtime runc)
limits=(--network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
fail() { echo "container test FAILED: $*" >&2; exit 1; }
exec 3>&1  # the timings go here even when a command's own output is sent to a file
timed() { local started=$SECONDS; "$@"; echo "  ($((SECONDS - started)) s)" >&3; }

echo "base image:"
timed tests/container/make_base.sh deblur-base:bookworm
# vfs keeps a whole copy of the file tree per layer and container: a build from scratch took 13 GB of disk at its
# peak (measured 2026-11-26), on top of the image it replaces. So the old image goes first, and a disk with too
# little room fails here, saying so, not minutes later inside buildah with "no space left on device". (The tag is
# this test's own, deblur:ci unless DEBLUR_IMAGE names another: a successful build would replace it anyway.)
"${podman[@]}" rmi -f "$image" > /dev/null 2>&1 || true
buildah "${storage[@]}" rmi --prune > /dev/null 2>&1 || true
graph_root=$("${podman[@]}" info --format '{{.Store.GraphRoot}}')
mkdir -p "$graph_root"
free_gb=$(df -BG --output=avail "$graph_root" | tail -1 | tr -dc 0-9)
needed_gb=${DEBLUR_IMAGE_DISK_GB:-15}
echo "disk: $free_gb GB free under $graph_root (the build needs about $needed_gb)"
[ "$free_gb" -ge "$needed_gb" ] || fail "only $free_gb GB free under $graph_root; building the image needs about" \
    "$needed_gb GB (vfs storage); free some, or set DEBLUR_IMAGE_DISK_GB if you know better"
echo "image: buildah bud with the defaults but BASE_IMAGE"
build() { buildah bud --isolation chroot "${storage[@]}" --build-arg BASE_IMAGE=deblur-base:bookworm -t "$image" \
    -f Dockerfile . > /tmp/deblur-image-build.log 2>&1 || { tail -30 /tmp/deblur-image-build.log; fail "build"; }; }
timed build
# The build stage is left untagged: remove it, so runs do not fill the disk.
buildah "${storage[@]}" rmi --prune > /dev/null 2>&1 || true
"${podman[@]}" image inspect "$image" --format 'size: {{.Size}} bytes' 

work=$(mktemp -d)
chmod 0777 "$work"  # the image's user (1000) writes its outputs here
trap 'rm -rf "$work"; "${podman[@]}" rm -f deblur-ci-serve > /dev/null 2>&1 || true' EXIT
run() { "${podman[@]}" run --rm "${limits[@]}" -v "$work:/work" "$image" "$@"; }

echo "deblur --help inside"
run --help | grep -q "Deblur photos" || fail "deblur --help"
echo "runs as a user other than root"
[ "$("${podman[@]}" run --rm "${limits[@]}" --entrypoint id "$image" -u)" != 0 ] || fail "runs as root"

echo "deblur predict on a real photo (scikit-image's coffee, 600x400) in the mounted folder"
python3 -c "from PIL import Image; from skimage import data; Image.fromarray(data.coffee()).save('$work/coffee.png')"
timed run predict coffee.png > "$work/predict.log" 2>&1 || { cat "$work/predict.log"; fail "predict"; }
python3 - "$work" <<'PY' || fail "predict's output"
import sys
from pathlib import Path
import numpy as np
from PIL import Image
work = Path(sys.argv[1])
out = np.asarray(Image.open(work / "deblurred" / "coffee.png"))
photo = np.asarray(Image.open(work / "coffee.png"))
assert out.shape == photo.shape == (400, 600, 3), out.shape
assert np.abs(out.astype(int) - photo).mean() > 0.1, "the output equals the input"
print("  output: 600x400, not the input; mean change", round(float(np.abs(out.astype(int) - photo).mean()), 2))
PY

echo "bad input: the same one line and exit 1 inside as outside"
echo "not an image" > "$work/bad.png"
set +e
inside=$(run predict bad.png -q 2>&1 | grep '^failed:')
code_inside=${PIPESTATUS[0]}
outside=$(cd "$work" && deblur predict bad.png -q 2>&1 | grep '^failed:')
code_outside=${PIPESTATUS[0]}
set -e
[ "$code_inside" = 1 ] && [ "$code_outside" = 1 ] || fail "bad input exited $code_inside inside, $code_outside outside"
[ "$inside" = "$outside" ] && [ -n "$inside" ] || fail "inside: '$inside', outside: '$outside'"
echo "  $inside"

echo "deblur serve: healthz and a POST from the host, then podman stop"
port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
"${podman[@]}" run -d --name deblur-ci-serve "${limits[@]}" -v "$work:/work" "$image" \
    serve --host 127.0.0.1 --port "$port" > /dev/null
started=$SECONDS
until curl -fsS "http://127.0.0.1:$port/healthz" > /dev/null 2>&1; do
    [ $((SECONDS - started)) -lt 180 ] || { "${podman[@]}" logs deblur-ci-serve; fail "serve never answered"; }
    sleep 1
done
echo "  healthy after $((SECONDS - started)) s"
status=$(curl -sS -o "$work/served.png" -w '%{http_code}' -F "image=@$work/coffee.png" "http://127.0.0.1:$port/v1/deblur")
[ "$status" = 200 ] || fail "POST /v1/deblur answered $status"
python3 -c "from PIL import Image; assert Image.open('$work/served.png').size == (600, 400)" || fail "served image"
timed "${podman[@]}" stop -t 60 deblur-ci-serve > /dev/null
exit_code=$("${podman[@]}" inspect deblur-ci-serve --format '{{.State.ExitCode}}')
[ "$exit_code" = 0 ] || { "${podman[@]}" logs deblur-ci-serve | tail -20; fail "serve exited $exit_code on SIGTERM"; }
echo "  stopped cleanly (exit 0)"
echo "container test passed"
