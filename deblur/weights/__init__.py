"""The pretrained models shipped inside the package: the network, `model.keras` with the `config.yaml` it was
trained with and its `MODEL_CARD.md` (data, recipe, training, figures), and in `kernel_aware/` the same three of
the kernel-aware network, the default (`deblur.paths.shipped_model(kernel_aware=True)`)."""
