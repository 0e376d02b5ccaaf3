"""Camera shake by a blur kernel: estimate it from the blurry photo, then invert it.

Hand-held shake blurs the whole photo with one path the camera took, a kernel. `estimate_kernel` finds it from
the blurry photo alone (blind), coarse to fine on a downscaled grayscale copy; `deconvolve` inverts it at full
size with a sparse-gradient prior; `restore` does both. Pure numpy and scipy: no model, no files. Images are HWC
RGB float32 in [0, 1], as everywhere in deblur. The ways of deblurring that use it are in `deblur.ways`.
"""
