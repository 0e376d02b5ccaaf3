"""The pretrained model shipped inside the package: `model.keras`, the `config.yaml` it was trained with, and its
`MODEL_CARD.md` (data, recipe, training, figures). `deblur.paths.shipped_model()` finds it."""
