#!/usr/bin/env bash
# A local base image from Debian's own packages, for building the Dockerfile where no registry can be pulled:
# debootstrap's minimal bookworm with python3, python3-venv and ca-certificates, committed with buildah as
# IMAGE (default deblur-base:bookworm). Made once per machine: an existing image is kept.
#
# It trusts this machine's certificate bundle (copied in, and named in pip's config), so that pip inside the
# build works where the machine reaches the package index through a proxy with its own CA.
set -euo pipefail
image=${1:-deblur-base:bookworm}
storage=(--storage-driver vfs)
if buildah "${storage[@]}" images --quiet "$image" 2> /dev/null | grep -q .; then
    echo "base image $image: already here"
    exit 0
fi
rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$rootfs" > /dev/null
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > "$rootfs/etc/pip.conf"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
container=$(buildah "${storage[@]}" from scratch)
mount=$(buildah "${storage[@]}" mount "$container")
cp -a "$rootfs"/. "$mount"/
buildah "${storage[@]}" umount "$container" > /dev/null
buildah "${storage[@]}" commit --quiet "$container" "$image" > /dev/null
buildah "${storage[@]}" rm "$container" > /dev/null
echo "base image $image: made from Debian packages"
